// A re-ingest tells the row a parcel was stored from by its digest: every change to a stored
// parcel's row that changes its facts is still seen, whichever column it is in and however the
// row is quoted, under another header or roll stage too, and a parcel stored without a digest is
// compared by its content hash.
import { describe, expect, it } from "vitest";
import { mapHeader } from "../domain/header.ts";
import {
  NAL_COLUMN_ALIASES,
  NAL_COLUMNS,
  NAL_REQUIRED_COLUMNS,
  type NalColumn,
} from "../domain/nal-layout.ts";
import { NalRowReader } from "../domain/nal-row.ts";
import { rollFactsOf } from "../domain/parcel.ts";
import { NAL_HEADER_LINE, nalLine } from "../testing/generate-nal.ts";
import { useIngestRuns } from "../testing/ingest-runs.ts";
import { ingestFile } from "./ingest-file.ts";

const run = useIngestRuns("nal-row-digest-");
const { asOf, collect, published, writeRoll } = run;

/** A row with every column the reader reads filled, and the others too. */
const FULL_ROW: Readonly<Partial<Record<NalColumn, string>>> = {
  ...Object.fromEntries(NAL_COLUMNS.map((column) => [column, "7"])),
  CO_NO: "23",
  ASMNT_YR: "2025",
  DOR_UC: "001",
  PA_UC: "01",
  JV: "300000",
  AV_NSD: "250000",
  TV_NSD: "200000",
  LND_VAL: "100000",
  JV_HMSTD: "0",
  EXMPT_01: "0",
  LND_SQFOOT: "5000",
  ACT_YR_BLT: "1990",
  TOT_LVG_AREA: "1500",
  NO_RES_UNTS: "1",
  OWN_NAME: "DOE JOHN",
  OWN_ADDR1: "1 MAIN ST",
  OWN_ADDR2: "APT 2",
  OWN_CITY: "MIAMI",
  OWN_STATE: "FL",
  OWN_ZIPCD: "33125",
  FIDU_NAME: "ROE JANE",
  PHY_ADDR1: "1 MAIN ST",
  PHY_ADDR2: "UNIT 2",
  PHY_CITY: "MIAMI",
  PHY_ZIPCD: "33125",
  PUBLIC_LND: "N",
  SEQ_NO: "1",
  SALE_PRC1: "200000",
  SALE_YR1: "2015",
  SALE_MO1: "6",
  QUAL_CD1: "01",
  VI_CD1: "I",
  MULTI_PAR_SAL1: "N",
  SALE_PRC2: "150000",
  SALE_YR2: "2010",
  SALE_MO2: "3",
  QUAL_CD2: "02",
  VI_CD2: "V",
  MULTI_PAR_SAL2: "N",
};

/** Another valid value of the same kind: a number one more (as wide), text one letter longer. */
function changed(column: NalColumn, value: string): string {
  if (column.startsWith("MULTI_PAR_SAL")) {
    return "Y";
  }
  if (column === "OWN_STATE") {
    return "GA";
  }
  return /^\d+$/.test(value) ? String(Number(value) + 1).padStart(value.length, "0") : `${value}X`;
}

const reader = new NalRowReader(
  mapHeader(NAL_HEADER_LINE.split(","), NAL_COLUMNS, NAL_COLUMN_ALIASES, NAL_REQUIRED_COLUMNS),
);

/** The content hash a row's facts have, built the long way. */
function contentHashOfLine(line: string, quoted: boolean): string {
  const fields = quoted ? parseQuoted(line) : line.split(",");
  const result = reader.read(fields, 2);
  if (!result.ok) {
    throw new Error(`the sample row is rejected: ${result.reject.reason}`);
  }
  return rollFactsOf(result.row, { rollStage: "final", recordedSales: [] }).contentHash;
}

/** The fields of a line whose quoted fields hold commas but no quotes. */
function parseQuoted(line: string): string[] {
  return (line.match(/("[^"]*"|[^,]*)(,|$)/g) ?? [])
    .slice(0, NAL_COLUMNS.length)
    .map((field) => field.replace(/,$/, "").replace(/^"(.*)"$/, "$1"));
}

const ingest = (path: string) =>
  ingestFile({ pool: run.harness.pool, publish: collect }, path, { asOf, rejectsPath: null });

async function storedHashes(): Promise<Map<string, string>> {
  const { rows } = await run.harness.pool.query<{ folio: string; content_hash: string }>(
    "SELECT folio, content_hash FROM parcels",
  );
  return new Map(rows.map((row) => [row.folio, row.content_hash]));
}

describe("a re-ingest told by row digests", () => {
  it("sees every change of one field of a stored parcel that changes its facts, quoted or not", async () => {
    // Per column, two parcels (one of them with a quoted field) whose next roll changes that column alone.
    const columns = NAL_COLUMNS.filter((column) => column !== "CO_NO" && column !== "PARCEL_ID");
    const parcels = columns.flatMap((column, index) =>
      [false, true].map((quoted) => {
        const parcelId = `${quoted ? "Q" : "P"}${index}`;
        const base = {
          ...FULL_ROW,
          PARCEL_ID: parcelId,
          ...(quoted ? { OWN_ADDR2: "APT 2, REAR" } : {}),
        };
        const next = { ...base, [column]: changed(column, base[column] ?? "") };
        return { folio: `23-${parcelId}`, quoted, before: nalLine(base), after: nalLine(next) };
      }),
    );
    expect(parcels.filter((parcel) => parcel.quoted).every((p) => p.before.includes('"'))).toBe(
      true,
    );
    await ingest(
      await writeRoll(
        "NAL23F202501.csv",
        parcels.map((parcel) => parcel.before),
      ),
    );
    published.length = 0;

    const summary = await ingest(
      await writeRoll(
        "NAL23F202501.csv",
        parcels.map((parcel) => parcel.after),
      ),
    );

    const expectedHashes = new Map(
      parcels.map((parcel) => [parcel.folio, contentHashOfLine(parcel.after, parcel.quoted)]),
    );
    const factsChanged = parcels
      .filter(
        (parcel) =>
          contentHashOfLine(parcel.before, parcel.quoted) !== expectedHashes.get(parcel.folio),
      )
      .map((parcel) => parcel.folio);
    // Most columns are not facts; the ones a lead is built from are, in both kinds of line.
    expect(factsChanged.length).toBeGreaterThanOrEqual(2 * 25);
    expect(published.map((event) => event.folio).sort()).toEqual([...factsChanged].sort());
    expect(summary).toMatchObject({
      changed: factsChanged.length,
      unchanged: parcels.length - factsChanged.length,
      rejected: 0,
    });
    expect(await storedHashes()).toEqual(expectedHashes);
  });

  it("tells a row of the same text under another header or another roll stage by its facts", async () => {
    const line = nalLine({ ...FULL_ROW, PARCEL_ID: "A1", OWN_CITY: "DORAL", PHY_CITY: "MIAMI" });
    await ingest(await writeRoll("NAL23P202501.csv", [line]));
    // The same text, final: roll_stage is a fact.
    published.length = 0;
    const final = await ingest(await writeRoll("NAL23F202501.csv", [line]));
    expect(final).toMatchObject({ changed: 1, unchanged: 0 });
    expect(published.map((event) => event.roll_stage)).toEqual(["final"]);

    // The same text under a header that names the two city columns the other way round.
    published.length = 0;
    const swapped = NAL_HEADER_LINE.split(",").map((column) =>
      column === "OWN_CITY" ? "PHY_CITY" : column === "PHY_CITY" ? "OWN_CITY" : column,
    );
    const renamed = await ingest(await writeRoll("NAL23F202501.csv", [line], swapped.join(",")));
    expect(renamed).toMatchObject({ changed: 1, unchanged: 0 });
    expect(published.map((event) => event.situs.city)).toEqual(["DORAL"]);
  });

  it("rejects a row of another county than its file's even when the store holds the parcel built from it", async () => {
    const line = nalLine({ ...FULL_ROW, CO_NO: "16", PARCEL_ID: "M1" });
    await ingest(await writeRoll("NAL16F202501.csv", [line]));
    const summary = await ingest(
      await writeRoll("NAL23F202501.csv", [line, nalLine({ ...FULL_ROW, PARCEL_ID: "A1" })]),
    );
    expect(summary).toMatchObject({ read: 2, new: 1, unchanged: 0, rejected: 1 });
    expect(summary.rejects).toEqual([
      expect.objectContaining({ line: 2, column: "CO_NO", parcelId: "M1" }),
    ]);
  });

  it("rejects a row of the wrong width on a re-ingest as on the first, though its key reads", async () => {
    const path = await writeRoll("NAL23F202501.csv", [
      nalLine({ ...FULL_ROW, PARCEL_ID: "A1" }),
      "23,W1,R,2025",
    ]);
    const first = await ingest(path);
    const again = await ingest(path);
    expect(first).toMatchObject({ new: 1, rejected: 1 });
    expect(again).toMatchObject({ unchanged: 1, rejected: 1 });
    expect(again.rejects).toEqual(first.rejects);
    expect(again.rejects[0]).toMatchObject({ line: 3, reason: "expected 165 fields, found 4" });
  });

  it("compares a parcel stored without a row digest by its content hash, and a quoted record by its text", async () => {
    const lines = [
      nalLine({ ...FULL_ROW, PARCEL_ID: "A1" }),
      nalLine({ ...FULL_ROW, PARCEL_ID: "A2", OWN_NAME: "DOE, JOHN" }),
    ];
    const path = await writeRoll("NAL23F202501.csv", lines);
    await ingest(path);
    const { rows } = await run.harness.pool.query<{ row_digest: string | null }>(
      "SELECT row_digest FROM parcels ORDER BY folio",
    );
    expect(rows.map((row) => row.row_digest)).toEqual([expect.any(String), expect.any(String)]);

    // Stored before digests were kept: unchanged by its content hash, nothing published.
    await run.harness.pool.query("UPDATE parcels SET row_digest = NULL");
    published.length = 0;
    expect(await ingest(path)).toMatchObject({ changed: 0, unchanged: 2 });
    expect(published).toEqual([]);

    // A field that is a fact, changed in a row whose parcel has no digest, is seen.
    const next = [
      lines[0] as string,
      nalLine({ ...FULL_ROW, PARCEL_ID: "A2", OWN_NAME: "DOE, JANE" }),
    ];
    expect(await ingest(await writeRoll("NAL23F202501.csv", next))).toMatchObject({
      changed: 1,
      unchanged: 1,
    });
    expect(published.map((event) => event.owner.name)).toEqual(["DOE, JANE"]);
  });
});
