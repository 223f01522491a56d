// What the publish benches share: their command line and the records they publish.
import { parseArgs } from "node:util";
import type { ParcelIngested } from "@th/contracts";
import { parcelIngested } from "@th/contracts/samples";

/** Records in all, records per publish and rounds, from the command line. */
export function publishArgs(defaultRecords: string): {
  total: number;
  perPublish: number;
  rounds: number;
} {
  const { values } = parseArgs({
    options: {
      records: { type: "string", default: defaultRecords },
      "per-publish": { type: "string", default: "2000" },
      rounds: { type: "string", default: "3" },
    },
  });
  return {
    total: Number(values.records),
    perPublish: Number(values["per-publish"]),
    rounds: Number(values.rounds),
  };
}

/** Distinct parcels: every record keyed by its own folio, as a county roll's are. */
export function distinctParcels(total: number): ParcelIngested[] {
  return Array.from({ length: total }, (_, index) => {
    const parcelId = String(1_000_000_000_000 + index * 7919);
    return {
      ...parcelIngested,
      folio: `23-${parcelId}`,
      parcel_id: parcelId,
      content_hash: index.toString(16).padStart(64, "0"),
    };
  });
}
