import { randomUUID } from "node:crypto";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listMatches } from "./matches.ts";
import { migrations } from "./migrations.ts";
import { decodeListCursor, encodeListCursor } from "./watchlists.ts";

let db: TestDatabase;
const retention = { keepMs: 90 * 86_400_000, now: () => new Date() };

beforeAll(async () => {
  db = await createTestDatabase([migrations]);
});
afterAll(() => db.drop());

/** Inserts `count` matches of a watchlist in one transaction; seq runs on from the last one. */
async function insertMatches(watchlistId: string, count: number): Promise<void> {
  await db.pool.query(
    `INSERT INTO matches (match_id, tenant_id, watchlist_id, recipe_version, folio, content_hash,
                          trigger, score, signals_fired, observed_at)
     SELECT gen_random_uuid(), 'tn_poll', $1, 1, '23-' || lpad(n::text, 6, '0'), 'h',
            'ingest', 1, '{}', now()
       FROM generate_series(1, $2::int) AS n`,
    [watchlistId, count],
  );
}

describe("the match listing pages in commit order", () => {
  it("shows every match exactly once when seq and transaction ids cross digit lengths", async () => {
    const watchlistId = `wl_${randomUUID()}`;
    // 120 matches take seq 1..120 in this fresh database: pages of 7 cross 9 -> 10 and 99 -> 100,
    // where text order ("10" before "9") and number order part. A second transaction follows.
    await insertMatches(watchlistId, 120);
    await insertMatches(watchlistId, 15);
    // The listing shows a transaction's matches once every older transaction on the server has
    // ended; other tests' transactions may still be open for a moment.
    await expect
      .poll(
        async () =>
          (await listMatches(db.pool, watchlistId, { limit: 1_000 }, retention)).matches.length,
        {
          timeout: 30_000,
        },
      )
      .toBe(135);
    const { rows } = await db.pool.query<{ match_id: string }>(
      "SELECT match_id FROM matches WHERE watchlist_id = $1 ORDER BY tx_id, seq",
      [watchlistId],
    );
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 100; page++) {
      const result = await listMatches(db.pool, watchlistId, { cursor, limit: 7 }, retention);
      seen.push(...result.matches.map((match) => match.match_id));
      cursor = result.next_cursor;
      if (!result.has_more) {
        break;
      }
    }
    expect(seen).toHaveLength(135);
    expect(seen).toEqual(rows.map((row) => row.match_id));
    const after = await listMatches(db.pool, watchlistId, { cursor, limit: 7 }, retention);
    expect(after).toMatchObject({ matches: [], has_more: false, next_cursor: cursor });
  });
});

describe("the match listing and transactions still open", () => {
  it("never hands out a cursor past a match whose transaction is still open: a later poll returns it, in order", async () => {
    const watchlistId = `wl_${randomUUID()}`;
    const slow = await db.pool.connect();
    try {
      // The slow transaction takes its id and seq first, then stays open while a later one
      // commits its match: ordered by commit, the later match would be handed out first.
      await slow.query("BEGIN");
      await slow.query(
        `INSERT INTO matches (match_id, tenant_id, watchlist_id, recipe_version, folio,
                              content_hash, trigger, score, signals_fired, observed_at)
         VALUES (gen_random_uuid(), 'tn_poll', $1, 1, '23-slow', 'h', 'ingest', 1, '{}', now())`,
        [watchlistId],
      );
      await insertMatches(watchlistId, 1);
      const early = await listMatches(db.pool, watchlistId, { limit: 10 }, retention);
      expect(early.matches).toEqual([]);
      await slow.query("COMMIT");
      const seen: string[] = early.matches.map((match) => match.folio);
      let cursor = early.next_cursor;
      // Other tests' transactions on the server may hold the horizon back a moment longer.
      await expect
        .poll(
          async () => {
            const page = await listMatches(db.pool, watchlistId, { cursor, limit: 10 }, retention);
            seen.push(...page.matches.map((match) => match.folio));
            cursor = page.next_cursor;
            return seen;
          },
          { timeout: 30_000 },
        )
        .toEqual(["23-slow", "23-000001"]);
    } finally {
      await slow.query("ROLLBACK").catch(() => {});
      slow.release();
    }
  });
});

describe("the match cursor", () => {
  const cursorOf = (text: string) => Buffer.from(text, "utf8").toString("base64url");

  it("refuses with 400 a cursor whose numbers no transaction or sequence can reach, instead of failing the query", async () => {
    for (const forged of ["m:1.99999999999999999999", "m:99999999999999999999.1", "x:1.1"]) {
      await expect(
        listMatches(db.pool, randomUUID(), { cursor: cursorOf(forged), limit: 10 }, retention),
        forged,
      ).rejects.toMatchObject({ code: "invalid_request" });
    }
    const largest = cursorOf(`m:${2n ** 64n - 1n}.${2n ** 63n - 1n}`);
    await expect(
      listMatches(db.pool, randomUUID(), { cursor: largest, limit: 10 }, retention),
    ).resolves.toMatchObject({ matches: [] });
  });
});

describe("the watchlist listing cursor", () => {
  it("holds the position it was written with and refuses a time that does not exist", () => {
    const written = encodeListCursor(new Date("2026-11-24T09:05:00.123Z"), "wl_0a1b");
    expect(decodeListCursor(written)).toEqual({
      createdAt: "2026-11-24T09:05:00.123Z",
      id: "wl_0a1b",
    });
    const forged = Buffer.from("w:2026-02-30T00:00:00.000Z|wl_0a1b", "utf8").toString("base64url");
    expect(decodeListCursor(forged)).toBeNull();
  });
});
