import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout } from "node:timers/promises";
import { contracts, type ParcelIngested, schemaHeaderValue } from "@th/contracts";
import type { Pool, PoolClient } from "@th/db";
import { describe, expect, it } from "vitest";
import { buildApp } from "../app.ts";
import { findByFolios } from "../db/parcel-queries.ts";
import {
  dropSecondaryIndexes,
  ensureSecondaryIndexes,
  ParcelBatch,
  publishPending,
  registerRecordSchema,
  STORED_EVENT_COLUMNS,
  type StoredEventColumns,
  storedEvent,
  upsertParcels,
} from "../db/parcel-store.ts";
import { mapHeader } from "../domain/header.ts";
import {
  NAL_COLUMN_ALIASES,
  NAL_COLUMNS,
  NAL_REQUIRED_COLUMNS,
  SDF_COLUMNS,
  type SdfColumn,
} from "../domain/nal-layout.ts";
import { NalRowReader } from "../domain/nal-row.ts";
import { buildParcel } from "../domain/parcel.ts";
import { NAL_HEADER_LINE, nalLine, writeNalFile } from "../testing/generate-nal.ts";
import { useIngestRuns } from "../testing/ingest-runs.ts";
import { ingestFile, type Publish } from "./ingest-file.ts";

const run = useIngestRuns("nal-ingest-");
const { asOf, collect, published, writeRoll } = run;

const rowValues = {
  CO_NO: 23,
  PARCEL_ID: "A1",
  ASMNT_YR: 2025,
  DOR_UC: "001",
  JV: 300000,
  OWN_NAME: "DOE JOHN",
  OWN_ADDR1: "1 MAIN ST",
  OWN_CITY: "MIAMI",
  OWN_STATE: "FL",
  OWN_ZIPCD: "33125",
  PHY_ADDR1: "1 MAIN ST",
  PHY_CITY: "MIAMI",
  PHY_ZIPCD: "33125",
};

const row = (parcelId: string, extra: Record<string, string | number> = {}) =>
  nalLine({
    CO_NO: 23,
    PARCEL_ID: parcelId,
    ASMNT_YR: 2025,
    DOR_UC: "001",
    JV: 300000,
    OWN_NAME: "DOE JOHN",
    OWN_ADDR1: "1 MAIN ST",
    OWN_CITY: "MIAMI",
    OWN_STATE: "FL",
    OWN_ZIPCD: "33125",
    PHY_ADDR1: "1 MAIN ST",
    PHY_CITY: "MIAMI",
    PHY_ZIPCD: "33125",
    ...extra,
  });

describe("content-hash diff", () => {
  it("publishes every parcel of a first ingest and nothing when the same file is ingested again", async () => {
    const path = join(run.dir, "NAL23F202501.csv");
    await writeNalFile(path, { rows: 300, seed: 11, countyNo: 23 });
    const first = await ingestFile({ pool: run.harness.pool, publish: collect }, path, { asOf });
    expect(first).toMatchObject({ read: 300, new: 300, changed: 0, unchanged: 0, rejected: 0 });
    expect(published).toHaveLength(300);

    published.length = 0;
    const again = await ingestFile({ pool: run.harness.pool, publish: collect }, path, { asOf });
    expect(again).toMatchObject({ read: 300, new: 0, changed: 0, unchanged: 300, rejected: 0 });
    expect(published).toHaveLength(0);
  });

  it("publishes a changed row once, with the previous hash, and leaves the others alone", async () => {
    const before = await writeRoll("NAL23F202501.csv", [row("A1"), row("A2"), row("A3")]);
    await ingestFile({ pool: run.harness.pool, publish: collect }, before, { asOf });
    const firstHash = published.find((event) => event.folio === "23-A2")?.content_hash;
    published.length = 0;

    const after = await writeRoll("NAL23F202501.csv", [
      row("A1"),
      row("A2", { JV: 310000 }),
      row("A3"),
    ]);
    const summary = await ingestFile({ pool: run.harness.pool, publish: collect }, after, { asOf });
    expect(summary).toMatchObject({ new: 0, changed: 1, unchanged: 2 });
    expect(published.map((event) => event.folio)).toEqual(["23-A2"]);
    expect(published[0]?.previous_content_hash).toBe(firstHash);
    expect(published[0]?.valuation.just_value).toBe(310000);

    published.length = 0;
    await ingestFile({ pool: run.harness.pool, publish: collect }, after, { asOf });
    expect(published).toHaveLength(0);
  });
});

describe("first load", () => {
  const indexDefinitions = async () => {
    const { rows } = await run.harness.pool.query<{ indexdef: string }>(
      "SELECT indexdef FROM pg_indexes WHERE tablename = 'parcels' ORDER BY indexname",
    );
    return rows.map((item) => item.indexdef);
  };

  it("loads an empty store without its secondary indexes and builds them as the migrations define them", async () => {
    const migrated = await indexDefinitions();
    expect(migrated).toHaveLength(5);
    const path = join(run.dir, "NAL23F202501.csv");
    await writeNalFile(path, { rows: 120, seed: 3, countyNo: 23 });
    const summary = await ingestFile({ pool: run.harness.pool, publish: collect }, path, {
      asOf,
      batchSize: 25,
      deferIndexesFromBytes: 0,
    });
    expect(summary).toMatchObject({ new: 120, published: 120 });
    expect(await indexDefinitions()).toEqual(migrated);
    const usable = await run.harness.pool.query<{ ready: boolean }>(
      `SELECT bool_and(indisvalid AND indisready) AS ready FROM pg_index
        WHERE indrelid = 'parcels'::regclass`,
    );
    expect(usable.rows[0]?.ready).toBe(true);
  });

  it("leaves the indexes to a caller that builds them after several files, even once the store holds parcels", async () => {
    const migrated = await indexDefinitions();
    const files = [];
    for (const [countyNo, seed] of [
      [23, 3],
      [60, 4],
    ] as const) {
      const path = join(run.dir, `NAL${countyNo}F202501.csv`);
      await writeNalFile(path, { rows: 60, seed, countyNo });
      files.push(path);
    }
    for (const path of files) {
      const summary = await ingestFile({ pool: run.harness.pool, publish: collect }, path, {
        asOf,
        batchSize: 25,
        indexesBuiltByCaller: true,
      });
      expect(summary).toMatchObject({ new: 60, published: 60 });
      // The primary key alone, after the first file and after the second.
      expect(await indexDefinitions()).toHaveLength(1);
    }
    expect(await ensureSecondaryIndexes(run.harness.pool)).toBe(4);
    expect(await indexDefinitions()).toEqual(migrated);
  });

  it("takes parcels for new when told to, and still diffs the batches that hold a stored one", async () => {
    await ingestFile(
      { pool: run.harness.pool, publish: collect },
      await writeRoll("NAL23F202501.csv", [row("N1"), row("N2")]),
      { asOf },
    );
    published.length = 0;
    const summary = await ingestFile(
      { pool: run.harness.pool, publish: collect },
      await writeRoll("NAL23F202502.csv", [row("N3"), row("N4"), row("N1", { JV: 350000 })]),
      { asOf, batchSize: 2, takeForNew: true },
    );
    expect(summary).toMatchObject({ read: 3, new: 2, changed: 1, unchanged: 0, published: 3 });
    const again = published.find((event) => event.folio === "23-N1");
    expect(again?.previous_content_hash).not.toBeNull();
    const { rows } = await run.harness.pool.query(
      "SELECT just_value FROM parcels WHERE folio = '23-N1'",
    );
    expect(Number(rows[0]?.just_value)).toBe(350000);
  });

  it("leaves the indexes in place when a first load fails", async () => {
    const migrated = await indexDefinitions();
    const path = await writeRoll("NAL23F202501.csv", [row("F1"), row("F2"), row("F3")]);
    const crashing: Publish = async () => {
      throw new Error("broker went away");
    };
    await expect(
      ingestFile({ pool: run.harness.pool, publish: crashing }, path, {
        asOf,
        batchSize: 1,
        deferIndexesFromBytes: 0,
      }),
    ).rejects.toThrow("broker went away");
    expect(await indexDefinitions()).toEqual(migrated);
  });

  it("has the service build the indexes at start when a first load died without building them", async () => {
    const migrated = await indexDefinitions();
    await dropSecondaryIndexes(run.harness.pool);
    expect(await indexDefinitions()).toHaveLength(1);
    const app = await buildApp(run.harness);
    await app.start();
    await app.recovery();
    await app.stop();
    expect(await indexDefinitions()).toEqual(migrated);
  });
});

/** `pool`, its clients' COMMIT taking `ms` longer. */
function slowCommits(pool: Pool, ms: number): Pool {
  const bound = <T extends object>(target: T, prop: string | symbol) => {
    const value = Reflect.get(target, prop, target);
    return typeof value === "function" ? value.bind(target) : value;
  };
  const slowClient = (client: PoolClient) =>
    new Proxy(client, {
      get: (target, prop) =>
        prop === "query"
          ? (...args: Parameters<PoolClient["query"]>) =>
              // Anything else as it is: a COPY's query returns its stream, not a promise.
              args[0] === "COMMIT"
                ? setTimeout(ms).then(() => target.query(...args))
                : target.query(...args)
          : bound(target, prop),
    });
  return new Proxy(pool, {
    get: (target, prop) =>
      prop === "connect" ? async () => slowClient(await target.connect()) : bound(target, prop),
  });
}

describe("a parcel repeated in its file", () => {
  const ingest = (path: string, batchSize = 2) =>
    ingestFile({ pool: run.harness.pool, publish: collect }, path, {
      asOf,
      batchSize,
      deferIndexesFromBytes: 0,
      rejectsPath: null,
    });
  const storedValues = async () => {
    const stored = await run.harness.pool.query(
      "SELECT folio, just_value, source_line FROM parcels ORDER BY folio",
    );
    return stored.rows.map((r) => [r.folio, Number(r.just_value), r.source_line]);
  };
  const duplicates = (summary: Awaited<ReturnType<typeof ingest>>) =>
    summary.rejects.map((reject) => [reject.line, reject.parcelId, reject.reason]);

  it("keeps the record with the highest SEQ_NO within a batch, whichever line comes first", async () => {
    const path = await writeRoll("NAL23F202501.csv", [
      row("D1", { SEQ_NO: 7, JV: 410000 }),
      row("D1", { SEQ_NO: 3, JV: 390000 }),
      row("D2", { SEQ_NO: 4, JV: 100000 }),
      row("D2", { SEQ_NO: 9, JV: 120000 }),
    ]);
    const summary = await ingest(path, 10);
    expect(summary).toMatchObject({ read: 4, new: 2, rejected: 2, published: 2 });
    expect(duplicates(summary)).toEqual([
      [3, "D1", "duplicate parcel in file; kept line 2"],
      [4, "D2", "duplicate parcel in file; kept line 5"],
    ]);
    expect(await storedValues()).toEqual([
      ["23-D1", 410000, 2],
      ["23-D2", 120000, 5],
    ]);
  });

  it("keeps the later of two records without SEQ_NO in different batches, and reports the earlier", async () => {
    const path = await writeRoll("NAL23F202501.csv", [
      row("E1"),
      row("E2"),
      row("E1", { JV: 320000 }),
      row("E2"),
    ]);
    const summary = await ingest(path);
    expect(summary).toMatchObject({ read: 4, new: 2, changed: 0, unchanged: 0, rejected: 2 });
    expect(duplicates(summary)).toEqual([
      [2, "E1", "duplicate parcel in file; kept line 4"],
      [3, "E2", "duplicate parcel in file; kept line 5"],
    ]);
    const [first, , again] = published;
    expect(published.map((event) => event.folio)).toEqual(["23-E1", "23-E2", "23-E1", "23-E2"]);
    expect(again?.previous_content_hash).toBe(first?.content_hash);
    expect(await storedValues()).toEqual([
      ["23-E1", 320000, 4],
      ["23-E2", 300000, 5],
    ]);
  });

  it("diffs a parcel of the next batch against what the batch before stores, in a store that holds parcels", async () => {
    // Not a first load: each batch is looked up while the next is read, so a lookup must not run
    // ahead of the store of a batch that holds the same parcel.
    await ingest(await writeRoll("NAL16F202501.csv", [nalLine({ ...rowValues, CO_NO: 16 })]), 10);
    published.length = 0;
    const path = await writeRoll("NAL23F202501.csv", [
      row("H1"),
      row("H2"),
      row("H1", { JV: 320000 }),
      row("H3"),
      row("H3", { JV: 330000 }),
      row("H4"),
    ]);
    const summary = await ingest(path);
    expect(summary).toMatchObject({ read: 6, new: 4, changed: 0, unchanged: 0, rejected: 2 });
    expect(duplicates(summary)).toEqual([
      [2, "H1", "duplicate parcel in file; kept line 4"],
      [5, "H3", "duplicate parcel in file; kept line 6"],
    ]);
    const [first, , again] = published;
    expect(published.map((event) => event.folio)).toEqual([
      "23-H1",
      "23-H2",
      "23-H1",
      "23-H3",
      "23-H3",
      "23-H4",
    ]);
    expect(again?.previous_content_hash).toBe(first?.content_hash);
    expect(published[4]?.previous_content_hash).toBe(published[3]?.content_hash);
    expect(await storedValues()).toEqual([
      ["16-A1", 300000, 2],
      ["23-H1", 320000, 4],
      ["23-H2", 300000, 3],
      ["23-H3", 330000, 6],
      ["23-H4", 300000, 7],
    ]);
  });

  it("looks a parcel up after the store lane's write of it, when the batch two before stores it and commits slowly", async () => {
    await ingest(await writeRoll("NAL16F202501.csv", [nalLine({ ...rowValues, CO_NO: 16 })]), 10);
    published.length = 0;
    const path = await writeRoll("NAL23F202501.csv", [
      row("J1"),
      row("J2"),
      row("J3"),
      row("J4"),
      row("J1", { JV: 320000 }),
      row("J5"),
    ]);
    // Each store commits late: the third batch is read and looked up while the first is stored.
    const pool = slowCommits(run.harness.pool, 300);
    const summary = await ingestFile({ pool, publish: collect }, path, {
      asOf,
      batchSize: 2,
      rejectsPath: null,
    });
    expect(summary).toMatchObject({ read: 6, new: 5, changed: 0, unchanged: 0, rejected: 1 });
    expect(duplicates(summary)).toEqual([[2, "J1", "duplicate parcel in file; kept line 6"]]);
    expect(published.map((event) => event.folio)).toEqual([
      "23-J1",
      "23-J2",
      "23-J3",
      "23-J4",
      "23-J1",
      "23-J5",
    ]);
    expect(published[4]?.previous_content_hash).toBe(published[0]?.content_hash);
  });

  it("does not let a record with a lower SEQ_NO in a later batch replace the stored one, on a first ingest or a re-ingest", async () => {
    const path = await writeRoll("NAL23F202501.csv", [
      row("F1", { SEQ_NO: 8, JV: 500000 }),
      row("F2", { SEQ_NO: 2 }),
      row("F3", { SEQ_NO: 3 }),
      row("F1", { SEQ_NO: 1, JV: 450000 }),
    ]);
    const first = await ingest(path);
    expect(first).toMatchObject({ read: 4, new: 3, changed: 0, rejected: 1, published: 3 });
    expect(duplicates(first)).toEqual([[5, "F1", "duplicate parcel in file; kept line 2"]]);
    expect(await storedValues()).toContainEqual(["23-F1", 500000, 2]);

    published.length = 0;
    const again = await ingest(path);
    expect(again).toMatchObject({ read: 4, new: 0, changed: 0, unchanged: 3, rejected: 1 });
    expect(duplicates(again)).toEqual(duplicates(first));
    expect(published).toEqual([]);
    expect(await storedValues()).toContainEqual(["23-F1", 500000, 2]);
  });

  it("takes a corrected file of the same name as another file: its record replaces the stored one", async () => {
    await ingest(
      await writeRoll("NAL23F202501.csv", [row("G0"), row("G1", { SEQ_NO: 9, JV: 200000 })]),
    );
    const corrected = await ingest(
      await writeRoll("NAL23F202501.csv", [row("G1", { SEQ_NO: 1, JV: 210000 })]),
    );
    expect(corrected).toMatchObject({ read: 1, changed: 1, rejected: 0 });
    expect(await storedValues()).toContainEqual(["23-G1", 210000, 2]);
  });
});

describe("publish after store", () => {
  it("republishes stored changes whose publish failed, on the next run", async () => {
    const path = await writeRoll("NAL23F202501.csv", [row("B1"), row("B2")]);
    const crashing: Publish = async () => {
      throw new Error("broker went away");
    };
    await expect(
      ingestFile({ pool: run.harness.pool, publish: crashing }, path, { asOf }),
    ).rejects.toThrow("broker went away");
    const stored = await run.harness.pool.query("SELECT folio FROM parcels ORDER BY folio");
    expect(stored.rows.map((r) => r.folio)).toEqual(["23-B1", "23-B2"]);

    // The next run finds the file unchanged, but first publishes what the crash left behind.
    const summary = await ingestFile({ pool: run.harness.pool, publish: collect }, path, { asOf });
    expect(summary.unchanged).toBe(2);
    expect(published.map((event) => event.folio).sort()).toEqual(["23-B1", "23-B2"]);
    expect(await publishPending(run.harness.pool, collect)).toBe(0);
  });

  it("publishes to the parcel.ingested topic through the bus, keyed by folio", async () => {
    const path = await writeRoll("NAL23F202501.csv", [row("C1")]);
    const received: { key: string | null; value: ParcelIngested }[] = [];
    const { on } = await import("@th/bus");
    const consumer = await run.harness.bus.consume({
      group: "ingest-test",
      fromBeginning: true,
      subscriptions: [
        on(contracts.parcelIngested, async (message) => {
          received.push({ key: message.key, value: message.value });
          return undefined;
        }),
      ],
    });
    try {
      await ingestFile(
        {
          pool: run.harness.pool,
          publish: (records) => run.harness.bus.publishEncoded(records),
        },
        path,
        { asOf },
      );
      await expect.poll(() => received.length, { timeout: 15_000 }).toBe(1);
      expect(received[0]?.key).toBe("23-C1");
      expect(received[0]?.value.owner.mailing_state).toBe("FL");
    } finally {
      await consumer.stop();
    }
  });
});

describe("the stored record", () => {
  it("is the record as published, with its writer schema, and reads back as the event", async () => {
    const path = await writeRoll("NAL23F202501.csv", [row("R1"), row("R2", { JV: 450000 })]);
    const sent = new Map<string, Buffer>();
    const keep: Publish = async (records) => {
      records.keys.forEach((key, index) => {
        sent.set(key, Buffer.from(records.values[index] as Buffer));
      });
      await collect(records);
    };
    await ingestFile({ pool: run.harness.pool, publish: keep }, path, { asOf });
    const { rows } = await run.harness.pool.query<StoredEventColumns & { folio: string }>(
      `SELECT folio, ${STORED_EVENT_COLUMNS} FROM parcels ORDER BY folio`,
    );
    expect(rows.map((stored) => stored.folio)).toEqual(["23-R1", "23-R2"]);
    for (const stored of rows) {
      expect(stored.event).toBeNull();
      expect(stored.record_schema).toBe(schemaHeaderValue(contracts.parcelIngested));
      expect(stored.record?.equals(sent.get(stored.folio) as Buffer)).toBe(true);
      expect(storedEvent(stored)).toEqual(published.find((event) => event.folio === stored.folio));
    }
    const found = await findByFolios(run.harness.pool, ["23-R2"]);
    expect(found.get("23-R2")?.event.valuation.just_value).toBe(450000);
  });

  it("of a parcel stored as JSON before records were stored still reads and republishes", async () => {
    const path = await writeRoll("NAL23F202501.csv", [row("J1")]);
    await ingestFile({ pool: run.harness.pool, publish: collect }, path, { asOf });
    const event = published[0] as ParcelIngested;
    await run.harness.pool.query(
      "UPDATE parcels SET event = $1, record = NULL, record_schema = NULL WHERE folio = $2",
      [JSON.stringify(event), event.folio],
    );
    expect((await findByFolios(run.harness.pool, [event.folio])).get(event.folio)?.event).toEqual(
      event,
    );
    // Unconfirmed on the topic: the recovery publish encodes it from its JSON.
    await run.harness.pool.query("UPDATE publish_watermark SET published_through = 0");
    published.length = 0;
    expect(await publishPending(run.harness.pool, collect)).toBe(1);
    expect(published).toEqual([event]);
  });

  it("names its writer schema by one id however many batches are stored", async () => {
    const path = await writeRoll(
      "NAL23F202501.csv",
      Array.from({ length: 9 }, (_, index) => row(`W${index}`)),
    );
    await ingestFile({ pool: run.harness.pool, publish: collect }, path, { asOf, batchSize: 2 });
    await ingestFile({ pool: run.harness.pool, publish: collect }, path, { asOf, batchSize: 2 });
    const { rows } = await run.harness.pool.query<{ schemas: number; ids: number; taken: string }>(
      `SELECT (SELECT count(*)::int FROM record_schemas) AS schemas,
              (SELECT count(DISTINCT record_schema)::int FROM parcels) AS ids,
              (SELECT last_value::text FROM record_schemas_id_seq) AS taken`,
    );
    // Five batches stored: had each taken an id, the sequence would stand at five or more.
    expect(rows[0]).toEqual({ schemas: 1, ids: 1, taken: "1" });
  });

  it("is never missing along with the event: such a row is refused", async () => {
    const path = await writeRoll("NAL23F202501.csv", [row("N1")]);
    await ingestFile({ pool: run.harness.pool, publish: collect }, path, { asOf });
    await expect(
      run.harness.pool.query(
        "UPDATE parcels SET record = NULL, event = NULL WHERE folio = '23-N1'",
      ),
    ).rejects.toThrow(/parcels_event_stored/);
  });
});

describe("store", () => {
  const built = (parcelId: string, jv: number) => {
    const reader = new NalRowReader(
      mapHeader(NAL_HEADER_LINE.split(","), NAL_COLUMNS, NAL_COLUMN_ALIASES, NAL_REQUIRED_COLUMNS),
    );
    const result = reader.read(row(parcelId, { JV: jv }).split(","), 2);
    if (!result.ok) {
      throw new Error(result.reject.reason);
    }
    return buildParcel(result.row, {
      ingestId: "ing_test",
      sourceFile: "test.csv",
      rollStage: "final",
      observedAt: asOf.toISOString(),
      asOf,
      previous: null,
      recordedSales: [],
    });
  };

  it("copies new parcels straight in and upserts one that was stored after all, each with a fresh change_seq", async () => {
    const schemaId = await registerRecordSchema(run.harness.pool);
    const newBatch = (...parcels: ReturnType<typeof built>[]) => {
      const batch = new ParcelBatch(schemaId);
      for (const parcel of parcels) {
        batch.add(parcel, false);
      }
      return batch;
    };
    const first = await upsertParcels(
      run.harness.pool,
      newBatch(built("S1", 100000), built("S2", 200000)),
    );
    // S2 is wrongly taken for new: the batch falls back to the upsert instead of failing.
    const second = await upsertParcels(
      run.harness.pool,
      newBatch(built("S2", 250000), built("S3", 300000)),
    );
    const { rows } = await run.harness.pool.query<{
      folio: string;
      just_value: string;
      seq: string;
    }>("SELECT folio, just_value, change_seq AS seq FROM parcels ORDER BY folio");
    expect(rows.map((item) => [item.folio, Number(item.just_value)])).toEqual([
      ["23-S1", 100000],
      ["23-S2", 250000],
      ["23-S3", 300000],
    ]);
    const seqs = Object.fromEntries(rows.map((item) => [item.folio, Number(item.seq)]));
    expect(first).toBe(Math.max(seqs["23-S1"] ?? 0, first));
    expect(second).toBe(Math.max(seqs["23-S2"] ?? 0, seqs["23-S3"] ?? 0));
    expect(seqs["23-S2"]).toBeGreaterThan(first);
  });
});

describe("rejects report", () => {
  it("lists each bad row with line, column and reason, and stores the good rows", async () => {
    const path = await writeRoll("NAL23F202501.csv", [
      row("D1"),
      row("D2", { JV: "12O000" }),
      "23,D3,R,2025",
      row("D4", { SALE_MO1: 13, SALE_YR1: 2020, SALE_PRC1: 1000 }),
      row("", {}),
      row("D6"),
    ]);
    const summary = await ingestFile({ pool: run.harness.pool, publish: collect }, path, { asOf });
    expect(summary).toMatchObject({ read: 6, new: 2, rejected: 4 });
    expect(summary.rejects).toEqual([
      { line: 3, column: "JV", reason: '"12O000" is not a number', parcelId: "D2" },
      { line: 4, column: null, reason: "expected 165 fields, found 4", parcelId: "D3" },
      { line: 5, column: "SALE_MO1", reason: "13 is above 12", parcelId: "D4" },
      { line: 6, column: "PARCEL_ID", reason: "is empty but required", parcelId: null },
    ]);
    const report = await readFile(`${path}.rejects.csv`, "utf8");
    expect(report.split("\n")[0]).toBe("line,column,parcel_id,reason");
    expect(report).toContain('3,JV,D2,"""12O000"" is not a number"');
    const stored = await run.harness.pool.query("SELECT folio FROM parcels ORDER BY folio");
    expect(stored.rows.map((r) => r.folio)).toEqual(["23-D1", "23-D6"]);
  });

  it("reports a re-ingest's rejects in the same order whichever of its rows are typed", async () => {
    const first = await writeRoll("NAL23F202501.csv", [row("S1"), row("S2"), row("S3"), row("S4")]);
    await ingestFile({ pool: run.harness.pool, publish: collect }, first, {
      asOf,
      rejectsPath: null,
    });
    // Batches of two: the rows' own rejects (a bad field, another county) and their diff's (an
    // older roll than the one stored), a batch of rejects only between them.
    const path = await writeRoll("NAL23F202502.csv", [
      row("S1", { JV: 310000 }),
      row("X1", { JV: "abc" }),
      row("S2", { ASMNT_YR: 2024 }),
      nalLine({ ...rowValues, CO_NO: 16, PARCEL_ID: "Y1" }),
      row("X2", { JV: "x" }),
      row("X3", { JV: "y" }),
      row("S3", { ASMNT_YR: 2024 }),
      row("X4", { JV: "z" }),
      row("S4"),
    ]);
    const summary = await ingestFile({ pool: run.harness.pool, publish: collect }, path, {
      asOf,
      batchSize: 2,
      rejectsPath: null,
    });
    expect(summary).toMatchObject({ read: 9, changed: 1, unchanged: 1, rejected: 7 });
    // As a reader typing every row as it came reported them: a batch's diff ran when the next
    // batch with a parcel came in, after that batch's rows.
    expect(summary.rejects.map((reject) => reject.line)).toEqual([3, 5, 6, 7, 9, 4, 8]);
  });

  it("rejects rows a store or the topic could not take (a NUL, a value past any roll's, a huge field) and is not stuck after them", async () => {
    const path = await writeRoll("NAL23F202501.csv", [
      row("P1"),
      row("P2", { OWN_NAME: "NUL\u0000NAME" }),
      row("P3", { JV: "9007199254740991" }),
      row("P4", { OWN_NAME: "X".repeat(1 << 20) }),
      row("P5"),
      row("P6\u0000"),
    ]);
    const summary = await ingestFile({ pool: run.harness.pool, publish: collect }, path, {
      asOf,
      batchSize: 2,
    });
    expect(summary).toMatchObject({ read: 6, new: 2, rejected: 4, published: 2 });
    expect(summary.rejects.map((reject) => [reject.line, reject.reason])).toEqual([
      [3, "holds a control character (U+0000)"],
      [4, '"9007199254740991" is out of range'],
      [5, expect.stringMatching(/^record longer than 65536 characters/)],
      [7, "holds a control character (U+0000)"],
    ]);
    const stored = await run.harness.pool.query("SELECT folio FROM parcels ORDER BY folio");
    expect(stored.rows.map((r) => r.folio)).toEqual(["23-P1", "23-P5"]);
    // Everything stored went out, so the next run starts clean.
    const next = await ingestFile(
      { pool: run.harness.pool, publish: collect },
      await writeRoll("NAL23F202502.csv", [row("P7")]),
      { asOf },
    );
    expect(next).toMatchObject({ new: 1, published: 1 });
    // Again into a store that holds parcels (rows keyed, not typed, as they are read): the same
    // rejects, and nothing stored from them.
    published.length = 0;
    const again = await ingestFile({ pool: run.harness.pool, publish: collect }, path, {
      asOf,
      batchSize: 2,
    });
    expect(again).toMatchObject({ read: 6, unchanged: 2, rejected: 4, published: 0 });
    expect(again.rejects).toEqual(summary.rejects);
  });

  it("rejects a row whose county is not the one the file name gives", async () => {
    const path = await writeRoll("NAL23F202501.csv", [row("C1"), row("C2", { CO_NO: 60 })]);
    const summary = await ingestFile({ pool: run.harness.pool, publish: collect }, path, { asOf });
    expect(summary).toMatchObject({ read: 2, new: 1, rejected: 1 });
    expect(summary.rejects).toEqual([
      { line: 3, column: "CO_NO", reason: "county 60 in a file of county 23", parcelId: "C2" },
    ]);
  });
});

describe("sales files and headers", () => {
  const sale = (values: Partial<Record<SdfColumn, string | number>>) =>
    SDF_COLUMNS.map((column) => String(values[column] ?? "")).join(",");
  const saleOf = (parcelId: string, saleId: string, price: number, year: number) =>
    sale({
      CO_NO: 23,
      PARCEL_ID: parcelId,
      SALE_ID_CD: saleId,
      QUAL_CD: "01",
      SALE_YR: year,
      SALE_MO: 6,
      SALE_PRC: price,
    });

  it("records the sales of a sales file with or without its header line, and a later roll carries them", async () => {
    const withHeader = join(run.dir, "SDF23F202501.csv");
    await writeFile(
      withHeader,
      `${[SDF_COLUMNS.join(","), saleOf("S1", "A1", 410000, 2024), saleOf("S2", "A2", 250000, 2023)].join("\n")}\n`,
    );
    const headerless = join(run.dir, "SDF23F202502.csv");
    await writeFile(headerless, `${saleOf("S3", "A3", 199000, 2022)}\n`);

    const first = await ingestFile({ pool: run.harness.pool, publish: collect }, withHeader, {
      asOf,
    });
    expect(first).toMatchObject({ kind: "SDF", read: 2, new: 2, rejected: 0 });
    const second = await ingestFile({ pool: run.harness.pool, publish: collect }, headerless, {
      asOf,
    });
    expect(second).toMatchObject({ kind: "SDF", read: 1, new: 1, rejected: 0 });
    const sales = await run.harness.pool.query(
      "SELECT folio, sale_id, price FROM recorded_sales ORDER BY folio",
    );
    expect(sales.rows).toEqual([
      { folio: "23-S1", sale_id: "A1", price: "410000" },
      { folio: "23-S2", sale_id: "A2", price: "250000" },
      { folio: "23-S3", sale_id: "A3", price: "199000" },
    ]);

    await ingestFile(
      { pool: run.harness.pool, publish: collect },
      await writeRoll("NAL23F202501.csv", [row("S1")]),
      { asOf },
    );
    expect(published.map((event) => [event.folio, event.last_sale])).toEqual([
      ["23-S1", expect.objectContaining({ price: 410000, year: 2024, month: 6 })],
    ]);
  });

  it("skips and reports every row of a roll whose header lacks a column a lead is built from", async () => {
    const header = NAL_COLUMNS.map((column) => (column === "OWN_NAME" ? "OWNER_NAME" : column));
    const path = join(run.dir, "NAL23F202501.csv");
    await writeFile(path, `${[header.join(","), row("H1"), row("H2")].join("\n")}\n`);
    const summary = await ingestFile({ pool: run.harness.pool, publish: collect }, path, { asOf });
    expect(summary).toMatchObject({
      read: 2,
      new: 0,
      rejected: 2,
      unloadable: "the header lacks OWN_NAME",
    });
    expect(summary.rejects.filter((reject) => reject.line > 1)).toEqual([
      { line: 2, column: null, reason: "skipped: header lacks a required column" },
      { line: 3, column: null, reason: "skipped: header lacks a required column" },
    ]);
    const stored = await run.harness.pool.query("SELECT count(*)::int AS n FROM parcels");
    expect(stored.rows[0].n).toBe(0);
    expect(published).toEqual([]);
  });
});

describe("the ingest's clock", () => {
  it("records the run as started and finished at the ingest's time, not the database's", async () => {
    const clock = new Date("2031-05-06T07:08:09.000Z");
    const roll = await writeRoll("NAL23F202501.csv", [row("C1"), row("C2")]);
    const summary = await ingestFile({ pool: run.harness.pool, publish: collect }, roll, {
      asOf,
      now: () => clock,
    });
    const { rows } = await run.harness.pool.query<{ started_at: Date; finished_at: Date }>(
      "SELECT started_at, finished_at FROM ingest_runs WHERE ingest_id = $1",
      [summary.ingestId],
    );
    expect(rows[0]?.started_at.toISOString()).toBe(clock.toISOString());
    expect(rows[0]?.finished_at.toISOString()).toBe(clock.toISOString());
  });
});

describe("a roll file's bytes", () => {
  it("stores a name beyond ASCII as written and rejects a row whose bytes are not UTF-8, as not UTF-8", async () => {
    const path = join(run.dir, "NAL23F202502.csv");
    // A lone 0xFF in place of the X of U2's owner: no UTF-8 text holds that byte.
    const notUtf8 = Buffer.from(`${row("U2", { OWN_NAME: "DOE X" })}\r\n`, "latin1");
    notUtf8[notUtf8.indexOf("DOE X") + 4] = 0xff;
    await writeFile(
      path,
      Buffer.concat([
        Buffer.from(`${NAL_HEADER_LINE}\r\n${row("U1", { OWN_NAME: "NUÑEZ JOSÉ" })}\r\n`),
        notUtf8,
        Buffer.from(`${row("U3")}\r\n`),
      ]),
    );
    const rejects = join(run.dir, "NAL23F202502.rejects.csv");
    const summary = await ingestFile({ pool: run.harness.pool, publish: collect }, path, {
      asOf,
      rejectsPath: rejects,
    });
    expect(summary).toMatchObject({ read: 3, new: 2, rejected: 1 });
    expect(published.find((event) => event.parcel_id === "U1")?.owner.name).toBe("NUÑEZ JOSÉ");
    expect(await readFile(rejects, "utf8")).toContain("not UTF-8");
  });
});
