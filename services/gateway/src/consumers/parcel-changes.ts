import type { Bus, KeyTail } from "@th/bus";
import { contracts } from "@th/contracts";
import type { Logger } from "@th/telemetry";
import type { LeadDocuments } from "../domain/lead-documents.ts";

/**
 * Keeps the gateway's lead documents from `parcel.ingested` (decision 0390): every instance
 * follows the topic's keys (the folios) from its end, without a consumer group, and drops what it
 * holds of each folio named; each fetch that leaves the tail at the topic's end vouches for the
 * documents for a while longer. Only keys are read, so a statewide ingest costs an instance
 * little more than the bytes.
 */
export function followParcelChanges(bus: Bus, documents: LeadDocuments, logger: Logger): KeyTail {
  return bus.tailKeys(
    contracts.parcelIngested.topic,
    {
      onKeys: (folios) => documents.changed(folios),
      onCaughtUp: (at) => documents.caughtUp(at),
      onRestart: () => documents.restart(),
      onError: (error) =>
        logger.warn(
          { err: error },
          "following parcel.ingested failed; lead reads go to the parcels service until it has caught up again",
        ),
    },
    { maxWaitMs: 250 },
  );
}
