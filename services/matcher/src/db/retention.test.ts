import { randomUUID } from "node:crypto";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { encodeMatchCursor, listMatches } from "./matches.ts";
import { migrations } from "./migrations.ts";
import { manualRunsRule, matchesRule, SWEEP_MATCHES_SQL } from "./retention.ts";

const DAY_MS = 86_400_000;
const KEEP_MS = 90 * DAY_MS;
const NOW = new Date();
const retention = { keepMs: KEEP_MS, now: () => NOW };
const daysAgo = (days: number) => new Date(NOW.getTime() - days * DAY_MS);

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase([migrations]);
});
afterAll(() => db.drop());
// The sweep takes the head of the whole table: each test starts from an empty one.
beforeEach(async () => {
  await db.pool.query("TRUNCATE matches, match_retention_marks, manual_runs, watchlists CASCADE");
});

/** Matches of a watchlist made at `at`, each in its own transaction, in order; their ids. */
async function insertMatches(watchlistId: string, at: Date, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let n = 0; n < count; n++) {
    const { rows } = await db.pool.query<{ match_id: string }>(
      `INSERT INTO matches (match_id, tenant_id, watchlist_id, recipe_version, folio, content_hash,
                            trigger, score, signals_fired, observed_at, created_at)
       VALUES (gen_random_uuid(), 'tn_keep', $1, 1, '23-' || $2, 'h', 'ingest', 1, '{}', $3, $3)
       RETURNING match_id`,
      [watchlistId, randomUUID().slice(0, 8), at],
    );
    ids.push(rows[0]?.match_id as string);
  }
  return ids;
}

/** Matches bulk-inserted in one statement (seq in order), all made at `at`. */
async function insertMany(watchlistId: string, at: Date, count: number): Promise<void> {
  await db.pool.query(
    `INSERT INTO matches (match_id, tenant_id, watchlist_id, recipe_version, folio, content_hash,
                          trigger, score, signals_fired, observed_at, created_at)
     SELECT gen_random_uuid(), 'tn_keep', $1, 1, '23-' || n, 'h', 'ingest', 1, '{}', $2, $2
       FROM generate_series(1, $3::int) AS n`,
    [watchlistId, at, count],
  );
}

/** The polling cursor that stands at this match, as a page ending there would hand it out. */
async function cursorAt(matchId: string): Promise<string> {
  const { rows } = await db.pool.query<{ tx_id: string; seq: string }>(
    "SELECT tx_id::text AS tx_id, seq::text AS seq FROM matches WHERE match_id = $1",
    [matchId],
  );
  const row = rows[0];
  if (!row) {
    throw new Error(`no match ${matchId}`);
  }
  return encodeMatchCursor(row.tx_id, row.seq);
}

/** Every match after the cursor, paging until the end, once the inserts are visible to polls. */
async function pollAll(watchlistId: string, cursor: string | undefined, expected: number) {
  await expect
    .poll(
      async () =>
        (await listMatches(db.pool, watchlistId, { limit: 100 }, retention)).matches.length,
      { timeout: 30_000 },
    )
    .toBeGreaterThanOrEqual(expected);
  const seen: string[] = [];
  let at = cursor;
  for (let page = 0; page < 100; page++) {
    const result = await listMatches(db.pool, watchlistId, { cursor: at, limit: 3 }, retention);
    seen.push(...result.matches.map((match) => match.match_id));
    at = result.next_cursor;
    if (!result.has_more) {
      return seen;
    }
  }
  throw new Error("too many pages");
}

async function sweepAll(rule = matchesRule(KEEP_MS), limit = 1_000): Promise<number> {
  let total = 0;
  for (;;) {
    const removed = await rule.sweep(db.pool, NOW, limit);
    total += removed;
    if (removed < limit) {
      return total;
    }
  }
}

async function matchIds(watchlistId: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ match_id: string }>(
    "SELECT match_id FROM matches WHERE watchlist_id = $1 ORDER BY tx_id, seq",
    [watchlistId],
  );
  return rows.map((row) => row.match_id);
}

describe("match retention", () => {
  it("removes the matches made before the 90-day horizon and keeps those made inside it", async () => {
    const list = `wl_${randomUUID()}`;
    const old = await insertMatches(list, daysAgo(90.01), 4);
    const kept = await insertMatches(list, daysAgo(89.99), 3);
    expect(await sweepAll()).toBe(4);
    expect(await matchIds(list)).toEqual(kept);
    expect(old.some((id) => kept.includes(id))).toBe(false);
  });

  it("removes at most one batch a statement, until the expired head is gone", async () => {
    const list = `wl_${randomUUID()}`;
    await insertMany(list, daysAgo(120), 25);
    await insertMany(list, daysAgo(10), 5);
    const rule = matchesRule(KEEP_MS);
    expect(await rule.sweep(db.pool, NOW, 10)).toBe(10);
    expect(await rule.sweep(db.pool, NOW, 10)).toBe(10);
    expect(await rule.sweep(db.pool, NOW, 10)).toBe(5);
    expect(await rule.sweep(db.pool, NOW, 10)).toBe(0);
    expect(await matchIds(list)).toHaveLength(5);
  });

  it("reports the age of the oldest match kept", async () => {
    const rule = matchesRule(KEEP_MS);
    expect(await rule.oldestRowAgeMs(db.pool, NOW)).toBeNull();
    await insertMatches(`wl_${randomUUID()}`, daysAgo(3), 1);
    expect(await rule.oldestRowAgeMs(db.pool, NOW)).toBe(3 * DAY_MS);
  });

  it("reads only the head of the table for a batch, through seq's index, never the whole table", async () => {
    const list = `wl_${randomUUID()}`;
    await insertMany(list, daysAgo(100), 50);
    await insertMany(list, daysAgo(1), 5_000);
    await db.pool.query("ANALYZE matches");
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      const { rows } = await client.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${SWEEP_MATCHES_SQL}`,
        [daysAgo(90), 100, NOW],
      );
      await client.query("ROLLBACK");
      const nodes = nodesOf(rows[0]?.["QUERY PLAN"][0].Plan as PlanNode);
      const scans = nodes.filter(
        (node) => node["Relation Name"] === "matches" && node["Node Type"].endsWith("Scan"),
      );
      expect(scans.map((node) => node["Node Type"]).sort()).toEqual(["Index Scan", "Tid Scan"]);
      // The batch's 100 rows of the head and the 50 expired among them: not the 5,050.
      expect(scans.reduce((sum, node) => sum + node["Actual Rows"], 0)).toBeLessThanOrEqual(150);
    } finally {
      client.release();
    }
    expect(await sweepAll(matchesRule(KEEP_MS), 100)).toBe(50);
  });
});

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Actual Rows": number;
  Plans?: PlanNode[];
}

function nodesOf(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodesOf)];
}

describe("a poll cursor and the matches kept", () => {
  /** Four expired matches then three kept ones of a watchlist, with a cursor at each, swept. */
  async function sweptList() {
    const list = `wl_${randomUUID()}`;
    const old = await insertMatches(list, daysAgo(91), 4);
    const kept = await insertMatches(list, daysAgo(89), 3);
    const cursors = new Map<string, string>();
    for (const id of [...old, ...kept]) {
      cursors.set(id, await cursorAt(id));
    }
    expect(await sweepAll()).toBe(4);
    return { list, old, kept, cursor: (id: string | undefined) => cursors.get(id ?? "") };
  }

  it("a cursor inside the horizon still works and loses nothing", async () => {
    const { list, kept, cursor } = await sweptList();
    expect(await pollAll(list, cursor(kept[0]), 3)).toEqual(kept.slice(1));
  });

  it("a cursor at the last match removed still works and answers every match kept", async () => {
    const { list, old, kept, cursor } = await sweptList();
    expect(await pollAll(list, cursor(old[3]), 3)).toEqual(kept);
  });

  it("a cursor just past the horizon answers 410 cursor_expired, saying how far back polling reaches", async () => {
    const { list, old, cursor } = await sweptList();
    const refused = listMatches(db.pool, list, { cursor: cursor(old[2]), limit: 10 }, retention);
    await expect(refused).rejects.toMatchObject({
      code: "cursor_expired",
      status: 410,
      extra: { retained_since: daysAgo(90).toISOString() },
    });
    await expect(refused).rejects.toThrow(/kept 90 days/);
  });

  it("a crafted cursor far in the past answers 410, never a page that hides the removed matches", async () => {
    const { list } = await sweptList();
    const forged = (text: string) => Buffer.from(text, "utf8").toString("base64url");
    for (const text of ["m:0.0", "m:1.1", "m:3.0"]) {
      await expect(
        listMatches(db.pool, list, { cursor: forged(text), limit: 10 }, retention),
        text,
      ).rejects.toMatchObject({ code: "cursor_expired" });
    }
    // Garbage is not a cursor at all: 400, as before.
    await expect(
      listMatches(db.pool, list, { cursor: "not-a-cursor", limit: 10 }, retention),
    ).rejects.toMatchObject({ code: "invalid_request" });
  });

  it("a cursor beyond every match answers an empty page: nothing after it was removed", async () => {
    const { list } = await sweptList();
    const beyond = encodeMatchCursor(String(2n ** 63n), "1");
    await expect(
      listMatches(db.pool, list, { cursor: beyond, limit: 10 }, retention),
    ).resolves.toMatchObject({ matches: [], has_more: false, next_cursor: beyond });
  });

  it("polling without a cursor starts at the oldest match kept", async () => {
    const { list, kept } = await sweptList();
    expect(await pollAll(list, undefined, 3)).toEqual(kept);
  });

  it("a watchlist none of whose matches were removed takes any cursor, however old", async () => {
    await sweptList();
    const other = `wl_${randomUUID()}`;
    const mine = await insertMatches(other, daysAgo(1), 2);
    const ancient = encodeMatchCursor("0", "0");
    expect(await pollAll(other, ancient, 2)).toEqual(mine);
  });

  it("a quiet watchlist polled up to its last match keeps its cursor when that match is removed", async () => {
    const list = `wl_${randomUUID()}`;
    const [only] = await insertMatches(list, daysAgo(95), 1);
    await insertMatches(`wl_${randomUUID()}`, daysAgo(1), 1);
    const last = await cursorAt(only as string);
    expect(await sweepAll()).toBe(1);
    expect(await pollAll(list, last, 0)).toEqual([]);
  });

  it("never answers a page with a hole while sweeps remove matches under it", async () => {
    // Rounds of concurrent polls from random cursors while small sweeps commit between them:
    // every page either follows its cursor exactly or is refused.
    let answered = 0;
    let refused = 0;
    for (let round = 0; round < 4; round++) {
      // The head of the table is the oldest: each round starts from an empty one.
      await db.pool.query("TRUNCATE matches, match_retention_marks");
      const list = `wl_${randomUUID()}`;
      const old = await insertMatches(list, daysAgo(100), 40);
      const kept = await insertMatches(list, daysAgo(1), 5);
      const order = [...old, ...kept];
      const cursors = await Promise.all(order.map(cursorAt));
      await pollAll(list, undefined, order.length);
      const rule = matchesRule(KEEP_MS);
      let sweeping = true;
      const sweeper = (async () => {
        while ((await rule.sweep(db.pool, NOW, 2)) > 0) {
          // two at a time, so polls land between the statements
        }
        sweeping = false;
      })();
      const poller = async () => {
        while (sweeping) {
          const from = Math.floor(Math.random() * order.length);
          const page = await listMatches(
            db.pool,
            list,
            { cursor: cursors[from], limit: 5 },
            retention,
          ).catch((error: unknown) => error);
          if ("matches" in (page as object)) {
            const { matches } = page as Awaited<ReturnType<typeof listMatches>>;
            expect(matches.map((match) => match.match_id)).toEqual(order.slice(from + 1, from + 6));
            answered++;
          } else {
            expect(page).toMatchObject({ code: "cursor_expired" });
            refused++;
          }
        }
      };
      await Promise.all([sweeper, poller(), poller(), poller(), poller()]);
      expect(await matchIds(list)).toEqual(kept);
    }
    expect(answered).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
  });
});

describe("manual run retention", () => {
  async function insertRun(createdAt: Date, status: string, heartbeatAt = createdAt) {
    const id = `run_${randomUUID()}`;
    const watchlist = `wl_${randomUUID()}`;
    await db.pool.query(
      `INSERT INTO watchlists (id, tenant_id, name, current_version, created_at, updated_at)
       VALUES ($1, 'tn_keep', 'runs', 1, $2, $2)`,
      [watchlist, createdAt],
    );
    await db.pool.query(
      `INSERT INTO manual_runs (id, tenant_id, watchlist_id, recipe_version, status, parcel_limit,
                               created_at, heartbeat_at)
       VALUES ($1, 'tn_keep', $2, 1, $3, 100, $4, $5)`,
      [id, watchlist, status, createdAt, heartbeatAt],
    );
    return id;
  }

  async function runIds(): Promise<string[]> {
    const { rows } = await db.pool.query<{ id: string }>(
      "SELECT id FROM manual_runs ORDER BY created_at",
    );
    return rows.map((row) => row.id);
  }

  it("removes the runs made before the 90-day horizon and keeps those made inside it", async () => {
    await insertRun(daysAgo(90.01), "succeeded");
    await insertRun(daysAgo(200), "failed");
    const kept = await insertRun(daysAgo(89.99), "succeeded");
    const rule = manualRunsRule(KEEP_MS);
    expect(await sweepAll(rule)).toBe(2);
    expect(await runIds()).toEqual([kept]);
    expect(await rule.oldestRowAgeMs(db.pool, NOW)).toBe(KEEP_MS - 0.01 * DAY_MS);
  });

  it("removes a run left running by a worker that died before the horizon, not one still reporting", async () => {
    await insertRun(daysAgo(100), "running", daysAgo(100));
    const live = await insertRun(daysAgo(100), "running", NOW);
    expect(await sweepAll(manualRunsRule(KEEP_MS))).toBe(1);
    expect(await runIds()).toEqual([live]);
  });
});
