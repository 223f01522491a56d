import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyLines, copyText } from "./copy.ts";
import { createTestDatabase, type TestDatabase } from "./testing.ts";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase([
    { schema: "widgets_v1", dir: join(import.meta.dirname, "fixtures", "v1") },
  ]);
});
afterAll(() => db.drop());

describe("COPY lines", () => {
  it("store every value as given: escapes, nulls, non-ASCII text and lines longer than a chunk", async () => {
    const values: (string | null)[] = [
      "plain",
      "tab\there",
      "line\nbreak and\r\nreturn",
      "back\\slash \\N not a null",
      null,
      "Niño Häuser 東京 🏠",
      "",
    ];
    // Two lines each longer than a chunk (1 MB), among enough rows that the lines span several
    // chunks; a long line on every few rows would copy gigabytes for the same proof.
    const long = "x".repeat(3 << 20);
    const rows = Array.from({ length: 5_000 }, (_, index) =>
      index === 1_000 || index === 4_000 ? long : (values[index % values.length] ?? null),
    );
    const client = await db.pool.connect();
    try {
      await client.query("CREATE TEMP TABLE copied (n int, value text)");
      await copyLines(
        client,
        "COPY copied (n, value) FROM STDIN",
        rows.map((value, index) => `${index}\t${copyText(value)}\n`),
      );
      const { rows: stored } = await client.query<{ value: string | null }>(
        "SELECT value FROM copied ORDER BY n",
      );
      expect(stored).toHaveLength(rows.length);
      expect(stored.every((row, index) => row.value === rows[index])).toBe(true);
    } finally {
      client.release();
    }
  });

  it("fail with Postgres's error and store nothing when a line is malformed", async () => {
    const client = await db.pool.connect();
    try {
      await client.query("CREATE TEMP TABLE strict (n int NOT NULL)");
      await expect(
        copyLines(client, "COPY strict (n) FROM STDIN", ["1\n", "two\n", "3\n"]),
      ).rejects.toThrow(/invalid input syntax/);
      const { rows } = await client.query("SELECT count(*)::int AS n FROM strict");
      expect(rows[0]).toEqual({ n: 0 });
    } finally {
      client.release();
    }
  });
});
