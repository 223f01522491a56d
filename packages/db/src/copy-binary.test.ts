import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHUNK_BYTES } from "./byte-chunks.ts";
import { copyChunks } from "./copy.ts";
import { binaryCopyStream, CopyBinary } from "./copy-binary.ts";
import { createTestDatabase, type TestDatabase } from "./testing.ts";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase([
    { schema: "widgets_v1", dir: join(import.meta.dirname, "fixtures", "v1") },
  ]);
});
afterAll(() => db.drop());

interface Row {
  n: number;
  small: number | null;
  whole: number | null;
  big: string | null;
  flag: boolean | null;
  words: string | null;
  raw: Buffer | null;
  tags: string[] | null;
}

const COLUMNS = "n, small, whole, big, flag, words, raw, tags";

function write(rows: CopyBinary, row: Omit<Row, "big"> & { big: number | null }): void {
  rows
    .row(8)
    .int32(row.n)
    .int16(row.small)
    .int32(row.whole)
    .int64(row.big)
    .bool(row.flag)
    .text(row.words)
    .bytes(row.raw)
    .textArray(row.tags ?? []);
}

describe("binary COPY rows", () => {
  it("store every value as written: nulls, extreme integers, non-ASCII text, raw bytes and arrays across chunk edges", async () => {
    const every = Buffer.from(Array.from({ length: 256 }, (_, byte) => byte));
    const samples = [
      { small: -32768, whole: -2147483648, big: -(2 ** 53 - 1), flag: true },
      { small: 32767, whole: 2147483647, big: 2 ** 53 - 1, flag: false },
      { small: 0, whole: -1, big: -1, flag: null },
      { small: null, whole: null, big: -(2 ** 32), flag: true },
      { small: 7, whole: 0, big: 2 ** 32 + 5, flag: false },
      { small: 1, whole: 1, big: null, flag: null },
    ];
    const texts = ["plain", "tab\tnew\nline \\N back\\slash", "Niño Häuser 東京 🏠", "", null];
    const tagLists = [
      [],
      ["one"],
      ["absentee_owner", "long_tenure", "ünïcode"],
      ["x".repeat(70_000)],
    ];
    const expected: Row[] = [];
    const rows = new CopyBinary();
    // Enough rows, some with values larger than a chunk, that values and arrays span chunks.
    for (let n = 0; n < 3_000; n++) {
      const sample = samples[n % samples.length] as (typeof samples)[number];
      const words = n % 97 === 0 ? "y".repeat((1 << 20) + 3) : (texts[n % texts.length] ?? null);
      const raw = n % 5 === 4 ? null : every.subarray(n % 256);
      const tags = tagLists[n % tagLists.length] as string[];
      write(rows, { n, ...sample, words, raw, tags });
      expected.push({
        n,
        ...sample,
        big: sample.big === null ? null : String(sample.big),
        words,
        raw,
        tags,
      });
    }
    expect(rows.rows).toBe(3_000);
    const client = await db.pool.connect();
    try {
      await client.query(
        `CREATE TEMP TABLE copied (n integer, small smallint, whole integer, big bigint,
           flag boolean, words text, raw bytea, tags text[])`,
      );
      const chunks = rows.take(true);
      expect(chunks.length).toBeGreaterThan(3);
      await copyChunks(
        client,
        `COPY copied (${COLUMNS}) FROM STDIN (FORMAT binary)`,
        binaryCopyStream(chunks),
      );
      const { rows: stored } = await client.query<Row>(`SELECT ${COLUMNS} FROM copied ORDER BY n`);
      expect(stored).toHaveLength(expected.length);
      for (const [index, row] of stored.entries()) {
        expect(row).toEqual(expected[index]);
      }
    } finally {
      client.release();
    }
  });

  it("write each kind of value whole when it is the one that starts a new chunk", async () => {
    const writers = [
      { type: "boolean", write: (rows: CopyBinary) => rows.bool(true), stored: true },
      { type: "smallint", write: (rows: CopyBinary) => rows.int16(-2), stored: -2 },
      { type: "integer", write: (rows: CopyBinary) => rows.int32(123_456), stored: 123_456 },
      {
        type: "bigint",
        write: (rows: CopyBinary) => rows.int64(2 ** 40 + 1),
        stored: String(2 ** 40 + 1),
      },
      {
        type: "bytea",
        write: (rows: CopyBinary) => rows.bytes(Buffer.from([1, 2])),
        stored: Buffer.from([1, 2]),
      },
      {
        type: "text[]",
        write: (rows: CopyBinary) => rows.textArray(["a", "b"]),
        stored: ["a", "b"],
      },
    ];
    const client = await db.pool.connect();
    try {
      for (const writer of writers) {
        const rows = new CopyBinary();
        // The row's field count and the padding leave one byte of the first chunk: too little
        // for any value, so the value under test begins the second chunk.
        rows.row(2).bytes(Buffer.alloc(CHUNK_BYTES - 2 - 4 - 1));
        writer.write(rows);
        const chunks = rows.take(true);
        expect(chunks).toHaveLength(2);
        await client.query(`CREATE TEMP TABLE edge (pad bytea, value ${writer.type})`);
        await copyChunks(
          client,
          "COPY edge (pad, value) FROM STDIN (FORMAT binary)",
          binaryCopyStream(chunks),
        );
        const { rows: stored } = await client.query<{ value: unknown }>("SELECT value FROM edge");
        expect(stored).toEqual([{ value: writer.stored }]);
        await client.query("DROP TABLE edge");
      }
    } finally {
      client.release();
    }
  });

  it("refuse a bigint that is not a safe integer instead of writing a wrong one", () => {
    expect(() => new CopyBinary().row(1).int64(2 ** 53)).toThrow(RangeError);
    expect(() => new CopyBinary().row(1).int64(1.5)).toThrow(RangeError);
  });

  it("fail with Postgres's error and store nothing when a row has the wrong number of fields", async () => {
    const client = await db.pool.connect();
    try {
      await client.query("CREATE TEMP TABLE strict (n integer NOT NULL, m integer)");
      const rows = new CopyBinary();
      rows.row(2).int32(1).int32(2);
      rows.row(1).int32(3);
      await expect(
        copyChunks(
          client,
          "COPY strict (n, m) FROM STDIN (FORMAT binary)",
          binaryCopyStream(rows.take(true)),
        ),
      ).rejects.toThrow(/row field count/);
      const { rows: stored } = await client.query("SELECT count(*)::int AS n FROM strict");
      expect(stored[0]).toEqual({ n: 0 });
    } finally {
      client.release();
    }
  });
});
