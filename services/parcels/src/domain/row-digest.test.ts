import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { generateNalLines } from "../testing/generate-nal.ts";
import { CsvReader, type CsvRecord, fieldValues } from "./csv.ts";
import { mapHeader } from "./header.ts";
import { NAL_COLUMN_ALIASES, NAL_COLUMNS, NAL_REQUIRED_COLUMNS } from "./nal-layout.ts";
import { NalRowReader } from "./nal-row.ts";
import { rollFactsOf } from "./parcel.ts";
import { ROW_FACTS_REVISION, rowDigestContext, rowDigestOf } from "./row-digest.ts";

/**
 * The facts (and rejects) of the sample below under each revision. When this test fails, the
 * reader or `rollFactsOf` now gives some row other facts than before, or refuses other rows:
 * raise ROW_FACTS_REVISION (a stored digest must not vouch for a row this code would build or
 * refuse otherwise) and record the new value under it.
 */
const SAMPLE_FACTS_BY_REVISION: Readonly<Record<number, string>> = {
  1: "6c4e58a500f0c2703a1e2dd49af4f9f4170adb2104b1c18c00558ae97f36e212",
};

const GOLDEN = join(import.meta.dirname, "..", "ingest", "golden");

/** Every record of a roll's text, its header first. */
function records(text: string): CsvRecord[] {
  const reader = new CsvReader();
  const out: CsvRecord[] = [];
  reader.push(text, out);
  reader.end(out);
  return out;
}

/** The sample: generated rolls of three counties and the golden rolls, each read as the ingest reads it. */
function sampleRolls(): string[] {
  const generated = (
    [
      [1, 23],
      [2, 16],
      [3, 60],
    ] as const
  ).map(([seed, countyNo]) => [...generateNalLines({ rows: 3000, seed, countyNo })].join("\n"));
  const golden = ["NAL23F202501.csv", "NAL23F202601.csv"].map((name) =>
    readFileSync(join(GOLDEN, name), "utf8"),
  );
  return [...generated, ...golden];
}

describe("row digests", () => {
  it("are vouched for by the revision the sample's facts were recorded under", () => {
    const digest = createHash("sha256");
    let rows = 0;
    for (const roll of sampleRolls()) {
      const [header, ...rest] = records(roll);
      const reader = new NalRowReader(
        mapHeader(
          fieldValues(header?.fields ?? []),
          NAL_COLUMNS,
          NAL_COLUMN_ALIASES,
          NAL_REQUIRED_COLUMNS,
        ),
      );
      for (const record of rest) {
        const result = reader.read(record.fields, record.line);
        if (!result.ok) {
          // What the reader refuses is part of it too: a row the store holds is not read again.
          const { line, column, reason } = result.reject;
          digest.update(`${line} ${column} ${reason}\n`);
          continue;
        }
        rows += 1;
        for (const rollStage of ["preliminary", "final"] as const) {
          digest.update(
            `${rollFactsOf(result.row, { rollStage, recordedSales: [] }).contentHash}\n`,
          );
        }
      }
    }
    expect(rows).toBeGreaterThan(9000);
    expect(digest.digest("hex")).toBe(SAMPLE_FACTS_BY_REVISION[ROW_FACTS_REVISION]);
  });

  it("tell a row's text under its file's header and roll stage, and a typed row carries the one it is given", () => {
    const header = NAL_COLUMNS.slice();
    const [, record] = records(
      `${[...generateNalLines({ rows: 1, seed: 5, countyNo: 23 })].join("\n")}\n`,
    );
    const text = record?.text ?? "";
    const context = rowDigestContext(header, "final");
    const digest = rowDigestOf(context, text);
    const others = [
      rowDigestOf(context, `${text} `),
      rowDigestOf(rowDigestContext(header, "preliminary"), text),
      rowDigestOf(rowDigestContext(header.slice().reverse(), "final"), text),
    ];
    expect(new Set([digest, ...others]).size).toBe(4);
    expect(rowDigestOf(rowDigestContext(header.slice(), "final"), text)).toBe(digest);
    const reader = new NalRowReader(
      mapHeader(header, NAL_COLUMNS, NAL_COLUMN_ALIASES, NAL_REQUIRED_COLUMNS),
    );
    expect(reader.read(record?.fields ?? [], 2, digest)).toMatchObject({
      ok: true,
      row: { digest },
    });
    expect(reader.read(record?.fields ?? [], 2)).toMatchObject({ ok: true, row: { digest: null } });
  });
});
