// Memory stays flat: a roll's batches are accepted only as fast as the topic takes their records.
// The reader hands the pipeline one batch at a time and waits for `accept` before reading on, so a
// stalled publish must stop `accept` after a few batches, into an empty store (diffed at once) and
// into one that holds parcels (each batch looked up while the next is read).
import { setTimeout as sleep } from "node:timers/promises";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { migrations } from "../db/migrations.ts";
import { type PublishParcels, registerRecordSchema } from "../db/parcel-store.ts";
import { fieldValues } from "../domain/csv.ts";
import { mapHeader } from "../domain/header.ts";
import { NAL_COLUMN_ALIASES, NAL_COLUMNS, NAL_REQUIRED_COLUMNS } from "../domain/nal-layout.ts";
import { type NalRow, NalRowReader, type RowResult } from "../domain/nal-row.ts";
import { generateNalLines } from "../testing/generate-nal.ts";
import type { FileContext } from "./batch-diff.ts";
import { IngestTally, ParcelPipeline } from "./parcel-pipeline.ts";

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase([migrations]);
});
afterAll(async () => {
  await db.drop();
});
beforeEach(async () => {
  await db.pool.query("TRUNCATE parcels, recorded_sales");
});

const BATCH = 50;

/** Typed rows of a generated county roll, in batches as the reader hands them over. */
function batches(count: number, seed: number): RowResult<NalRow>[][] {
  const lines = [...generateNalLines({ rows: count * BATCH, seed, countyNo: 23 })];
  const reader = new NalRowReader(
    mapHeader((lines[0] ?? "").split(","), NAL_COLUMNS, NAL_COLUMN_ALIASES, NAL_REQUIRED_COLUMNS),
  );
  const rows = lines
    .slice(1)
    // Lines with quoted fields are the CSV reader's business, not this test's.
    .filter((line) => !line.includes('"'))
    .map((line, index) => reader.read(fieldValues(line.split(",")), index + 2));
  return Array.from({ length: Math.floor(rows.length / BATCH) }, (_, index) =>
    rows.slice(index * BATCH, (index + 1) * BATCH),
  );
}

async function pipeline(publish: PublishParcels, firstLoad: boolean): Promise<ParcelPipeline> {
  const file: FileContext = {
    ingestId: "ing_test",
    sourceFile: "NAL23F202501.csv",
    sourceFileId: "NAL23F202501.csv:1",
    rollStage: "final",
    asOf: new Date("2026-03-01T00:00:00Z"),
    schemaId: await registerRecordSchema(db.pool),
    countyNo: 23,
    now: () => new Date("2026-03-02T00:00:00Z"),
    reject: () => {},
  };
  return new ParcelPipeline(db.pool, publish, file, new IngestTally(), {
    firstLoad,
    sales: false,
    deferIndexes: false,
    watermarkByCaller: false,
  });
}

/** Whether `promise` is still pending after a while. */
async function stillPending(promise: Promise<unknown>): Promise<boolean> {
  const outcome = await Promise.race([promise.then(() => "settled"), sleep(300)]);
  return outcome !== "settled";
}

describe("a roll's pipeline under a stalled topic", () => {
  for (const firstLoad of [true, false]) {
    it(`stops accepting batches after a few while the topic takes nothing, ${firstLoad ? "into an empty store" : "into a store that holds parcels"}, and stores them all once it does`, async () => {
      const earlier = firstLoad ? [] : (batches(2, 99)[0] ?? []);
      if (!firstLoad) {
        const before = await pipeline(async () => {}, true);
        await before.accept(earlier);
        await before.stored();
        await before.published();
      }
      const release = Promise.withResolvers<void>();
      let published = 0;
      const stalled: PublishParcels = async (records) => {
        await release.promise;
        published += records.values.length;
      };
      const lanes = await pipeline(stalled, firstLoad);
      const all = batches(12, 7);
      let accepted = 0;
      let blocked: Promise<void> | undefined;
      for (const batch of all) {
        const accepting = lanes.accept(batch);
        if (await stillPending(accepting)) {
          blocked = accepting;
          break;
        }
        accepted += 1;
      }
      // The batch being published, the one being stored, the one diffed (and one looked up).
      expect(blocked).toBeDefined();
      expect(accepted).toBeLessThanOrEqual(3);
      release.resolve();
      await blocked;
      for (const batch of all.slice(accepted + 1)) {
        await lanes.accept(batch);
      }
      await lanes.stored();
      await lanes.published();
      const rows = all.reduce((sum, batch) => sum + batch.length, 0);
      expect(published).toBe(rows);
      const { rows: stored } = await db.pool.query<{ count: string }>(
        "SELECT count(*) FROM parcels",
      );
      expect(earlier.length).toBe(firstLoad ? 0 : BATCH);
      expect(Number(stored[0]?.count)).toBe(rows + earlier.length);
    });
  }
});
