import { randomUUID } from "node:crypto";
import { copyFile, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrate, type Pool } from "@th/db";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { listPartitions } from "@th/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WHOLE } from "../domain/shard.ts";
import { claimDeliveries, insertDeliveries } from "./deliveries.ts";
import { selectAttempts, selectDeliveryPage } from "./delivery-log.ts";
import { migrations } from "./migrations.ts";
import {
  ATTEMPTS,
  completePartitionIndexes,
  DELIVERIES,
  ensureDeliveryMonths,
} from "./partitions.ts";

const PARTITIONING = "20270305000000_history_before_monthly_partitions.sql";
const DAY = 86_400_000;

let db: TestDatabase;
let before: string;

beforeAll(async () => {
  // A database as the release before the partitioning migrations left it.
  before = await mkdtemp(join(tmpdir(), "dispatcher-partitioning-"));
  for (const file of await readdir(migrations.dir)) {
    if (file.endsWith(".sql") && file < PARTITIONING) {
      await copyFile(join(migrations.dir, file), join(before, file));
    }
  }
  db = await createTestDatabase([{ schema: migrations.schema, dir: before }]);
});
afterAll(async () => {
  await db?.drop();
  await rm(before, { recursive: true, force: true });
});

/** Deliveries in every state (with their attempts), as the previous schema stored them. */
async function fillPreviousSchema(pool: Pool, deliveries = 600): Promise<void> {
  await pool.query(
    `INSERT INTO tenants (tenant_id, revision, tier, status, lead_views_per_month,
                          concurrent_webhooks, changed_at)
     VALUES ('tn_1', 1, 'team', 'active', 5000, 10, now())`,
  );
  await pool.query(
    `INSERT INTO endpoints (id, tenant_id, watchlist_id, url, events)
     VALUES ('ep_1', 'tn_1', 'wl_1', 'https://example.test/hook', '{watchlist.match}')`,
  );
  const states = ["pending", "retrying", "parked", "complete", "dead_letter", "exhausted"];
  await pool.query(
    `INSERT INTO deliveries (id, endpoint_id, tenant_id, watchlist_id, match_id, folio,
                             event_type, body, state, attempts, due_at, created_at, hold_until)
     SELECT gen_random_uuid(), 'ep_1', 'tn_1', 'wl_1', 'm_' || g, '23-' || g, 'watchlist.match',
            '{"n":' || g || '}', ($1::text[])[1 + g % 6], g % 5,
            now() - interval '1 minute', now() - g * interval '1 hour',
            CASE WHEN g % 6 IN (3, 4) THEN now() + interval '10 days' END
       FROM generate_series(1, $2::int) g`,
    [states, deliveries],
  );
  await pool.query(
    `INSERT INTO attempts (delivery_id, replay_no, attempt, attempted_at, duration_ms,
                           status_code, state)
     SELECT d.id, 0, a, d.created_at + a * interval '1 second', 40, 500, 'retrying'
       FROM deliveries d CROSS JOIN generate_series(1, 2) a`,
  );
}

/**
 * Rows as JSON, without the reply column a later migration drops (decision 0331) and the columns
 * named in `without`.
 */
async function snapshot(
  table: string,
  key: string,
  pool: Pool = db.pool,
  without: readonly string[] = [],
): Promise<Map<string, string>> {
  const { rows } = await pool.query<{ key: string; row: string }>(
    `SELECT ${key} AS key, (to_jsonb(t) - 'response_excerpt' - $1::text[])::text AS row
       FROM ${table} t`,
    [without],
  );
  return new Map(rows.map((row) => [row.key, row.row]));
}

describe("the migration that partitions deliveries and attempts by month", () => {
  let deliveriesBefore: Map<string, string>;
  let attemptsBefore: Map<string, string>;

  beforeAll(async () => {
    await fillPreviousSchema(db.pool);
    deliveriesBefore = await snapshot("deliveries", "id::text");
    attemptsBefore = await snapshot("attempts", "delivery_id || '/' || attempt");
    await migrate(db.url, migrations);
  });

  it("keeps every delivery and attempt as it was, in the first partition, with months ahead", async () => {
    expect(deliveriesBefore.size).toBe(600);
    expect(await snapshot("deliveries", "id::text")).toEqual(deliveriesBefore);
    expect(await snapshot("attempts", "delivery_id || '/' || attempt")).toEqual(attemptsBefore);
    for (const parent of [DELIVERIES, ATTEMPTS]) {
      const months = await listPartitions(db.pool, parent);
      expect(months[0]?.from).toBeNull();
      expect(months).toHaveLength(4);
      // Every month after the first partition is one calendar month, back to back.
      for (const [i, month] of months.entries()) {
        expect(month.name).toBe(
          `${parent}_p${(month.from ?? new Date((month.to?.getTime() ?? 0) - DAY)).toISOString().slice(0, 7).replace("-", "")}`,
        );
        if (i > 0) {
          expect(month.from).toEqual(months[i - 1]?.to);
        }
      }
      const { rows } = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${months[0]?.name}`,
      );
      expect(rows[0]?.n).toBe(parent === DELIVERIES ? 600 : 1200);
    }
  });

  it("still claims, lists and reads the deliveries it moved, and takes a redelivered match as a no-op", async () => {
    const claimed = await claimDeliveries(db.pool, {
      now: new Date(),
      limit: 1000,
      held: new Map(),
      defaultConcurrency: 5,
      depth: 1000,
      retrySweepGraceMs: 5_000,
      leaseMs: 20_000,
      share: WHOLE,
    });
    const { rows: due } = await db.pool.query<{ id: string }>(
      `SELECT id FROM deliveries WHERE state IN ('pending', 'parked', 'exhausted', 'retrying')`,
    );
    expect(claimed.length).toBeGreaterThan(0);
    expect(claimed.every((row) => due.some((d) => d.id === row.id))).toBe(true);
    expect(new Set(claimed.map((row) => row.state))).toEqual(
      new Set(["pending", "parked", "exhausted", "retrying"]),
    );
    const page = await selectDeliveryPage(
      db.pool,
      { endpointId: "ep_1", tenantId: "tn_1", state: null, after: null },
      1000,
    );
    expect(page.map((row) => row.id).sort()).toEqual([...deliveriesBefore.keys()].sort());
    expect(await selectAttempts(db.pool, page[0]?.id ?? "")).toHaveLength(2);
    const record = {
      tenant_id: "tn_1",
      watchlist_id: "wl_1",
      folio: "23-1",
      body: "{}",
      trace_context: null,
    };
    expect(
      await insertDeliveries(db.pool, [{ ...record, match_id: "m_1" }], "watchlist.match"),
    ).toBe(0);
    const fresh = `m_${randomUUID()}`;
    const twice = [
      { ...record, match_id: fresh },
      { ...record, match_id: fresh },
    ];
    expect(await insertDeliveries(db.pool, twice, "watchlist.match")).toBe(1);
    expect(await insertDeliveries(db.pool, twice, "watchlist.match")).toBe(0);
  });

  it("creates one delivery of a match that two intakes take in at once", async () => {
    const match = `m_${randomUUID()}`;
    const record = {
      tenant_id: "tn_1",
      watchlist_id: "wl_1",
      match_id: match,
      folio: "23-9",
      body: "{}",
      trace_context: null,
    };
    // The first intake stops before its commit, its row written but not visible to others.
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let reachedCommit = () => {};
    const atCommit = new Promise<void>((resolve) => {
      reachedCommit = resolve;
    });
    const slowPool = Object.create(db.pool) as Pool;
    slowPool.connect = (async () => {
      const client = await db.pool.connect();
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      client.query = (async (...args: unknown[]) => {
        if (args[0] === "COMMIT") {
          reachedCommit();
          await gate;
        }
        return query(...args);
      }) as typeof client.query;
      return client;
    }) as typeof slowPool.connect;
    const first = insertDeliveries(slowPool, [record], "watchlist.match");
    await atCommit;
    const second = insertDeliveries(db.pool, [record], "watchlist.match");
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    expect((await first) + (await second)).toBe(1);
    const { rows } = await db.pool.query("SELECT 1 FROM deliveries WHERE match_id = $1", [match]);
    expect(rows).toHaveLength(1);
  });

  it("builds the indexes the first partition lacks, after which every partitioned index is valid", async () => {
    const invalid = async () => {
      const { rows } = await db.pool.query<{ name: string }>(
        `SELECT indexrelid::regclass::text AS name FROM pg_index
          WHERE indrelid IN ('deliveries'::regclass, 'attempts'::regclass) AND NOT indisvalid
          ORDER BY 1`,
      );
      return rows.map((row) => row.name);
    };
    expect(await invalid()).toEqual([
      "attempts_attempted_at",
      "attempts_pkey",
      "deliveries_by_match",
      "deliveries_created_at",
      "deliveries_held",
      "deliveries_pkey",
    ]);
    expect(await completePartitionIndexes(db.pool, DELIVERIES)).toBe(4);
    expect(await completePartitionIndexes(db.pool, ATTEMPTS)).toBe(2);
    expect(await invalid()).toEqual([]);
    expect(await completePartitionIndexes(db.pool, DELIVERIES)).toBe(0);
  });

  it("creates the coming months' partitions, leaving the months the first one covers to it", async () => {
    const months = await listPartitions(db.pool, DELIVERIES);
    const last = months.at(-1)?.to ?? new Date();
    await ensureDeliveryMonths(db.pool, new Date(last.getTime() - DAY));
    await ensureDeliveryMonths(db.pool, new Date());
    const after = await listPartitions(db.pool, DELIVERIES);
    expect(after).toHaveLength(months.length + 2);
    expect(after.slice(0, months.length)).toEqual(months);
    const { rows } = await db.pool.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'deliveries'::regclass
          AND NOT coalesce(c.reloptions @> ARRAY['fillfactor=50'], false)`,
    );
    expect(rows).toEqual([]);
    expect(await listPartitions(db.pool, ATTEMPTS)).toHaveLength(months.length + 2);
  });
});

const PARTITIONED = "20270305000200_history_partitioned_by_month.sql";

/**
 * The longest a statement of the service may wait on the partitioning: the lock_timeout the
 * migration that swaps the tables sets, past which it gives up its lock request rather than hold
 * the tables' readers and writers queued behind it (its lock itself lasts for catalog changes).
 */
async function documentedLockTimeoutMs(): Promise<number> {
  const sql = await readFile(join(migrations.dir, PARTITIONED), "utf8");
  const seconds = /SET LOCAL lock_timeout = '(\d+)s'/.exec(sql)?.[1];
  if (!seconds) {
    throw new Error(`${PARTITIONED} sets no lock_timeout`);
  }
  return Number(seconds) * 1000;
}

interface Calls {
  calls: number;
  failures: unknown[];
  longestMs: number;
}

/** Runs `work`, counting it, its failure and how long it took; undefined when it failed. */
async function timed<T>(calls: Calls, work: () => Promise<T>): Promise<T | undefined> {
  const started = performance.now();
  try {
    return await work();
  } catch (error) {
    calls.failures.push(error);
    return undefined;
  } finally {
    calls.calls++;
    calls.longestMs = Math.max(calls.longestMs, performance.now() - started);
  }
}

/**
 * This release's dispatcher while the migrations run, each loop on its own as the intake consumer
 * and the worker run: the intake takes in two new matches at a time (a batch that fails is sent
 * again, as the consumer's records are redelivered), the worker claims what is due. A release
 * before this one fails its intake until rolled forward (operations, Upgrade); this one's
 * statements are the ones that must go on.
 */
function keepDispatching(pool: Pool) {
  let stop = false;
  const intake: Calls & { matches: string[]; lost: string[] } = {
    calls: 0,
    failures: [],
    longestMs: 0,
    matches: [],
    lost: [],
  };
  const claim: Calls & { claimed: number } = { calls: 0, failures: [], longestMs: 0, claimed: 0 };
  const takeIn = async (n: number) => {
    const batch = ["a", "b"].map((side) => ({
      tenant_id: "tn_1",
      watchlist_id: "wl_1",
      match_id: `live_${n}${side}`,
      folio: `24-${n}`,
      body: "{}",
      trace_context: null,
    }));
    for (let tries = 0; tries < 20; tries++) {
      if (
        (await timed(intake, () => insertDeliveries(pool, batch, "watchlist.match"))) !== undefined
      ) {
        intake.matches.push(...batch.map((row) => row.match_id));
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    intake.lost.push(...batch.map((row) => row.match_id));
  };
  const claimSome = async () => {
    const rows = await timed(claim, () =>
      claimDeliveries(pool, {
        now: new Date(),
        limit: 5,
        held: new Map(),
        defaultConcurrency: 5,
        depth: 1000,
        retrySweepGraceMs: 5_000,
        leaseMs: 60_000,
        share: WHOLE,
      }),
    );
    claim.claimed += rows?.length ?? 0;
  };
  const running = Promise.all([
    (async () => {
      for (let n = 0; !stop; n++) {
        await takeIn(n);
      }
    })(),
    (async () => {
      while (!stop) {
        await claimSome();
      }
    })(),
  ]);
  return {
    intake,
    claim,
    async stop() {
      stop = true;
      await running;
    },
  };
}

describe("the partitioning migrations under this release's intake and claim", () => {
  let live: TestDatabase;

  beforeAll(async () => {
    live = await createTestDatabase([{ schema: migrations.schema, dir: before }]);
    await fillPreviousSchema(live.pool, 20_000);
  });
  afterAll(async () => {
    await live?.drop();
  });

  it("keeps every row, loses no match taken in, and holds no statement past the migration's lock_timeout", async () => {
    // The claim leases rows: their lease columns change, nothing else of them may.
    const leases = ["lease_token", "lease_until"];
    const deliveriesBefore = await snapshot("deliveries", "id::text", live.pool, leases);
    const attemptsBefore = await snapshot("attempts", "delivery_id || '/' || attempt", live.pool);
    const bound = await documentedLockTimeoutMs();

    const traffic = keepDispatching(live.pool);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const atStart = { intake: traffic.intake.calls, claim: traffic.claim.calls };
    const { applied } = await migrate(live.url, migrations);
    const during = {
      intake: traffic.intake.calls - atStart.intake,
      claim: traffic.claim.calls - atStart.claim,
    };
    await traffic.stop();

    // The outbox's shared migrations run too; the partitioning's three are the point.
    expect(applied.filter((name) => name.startsWith("20270305"))).toEqual([
      PARTITIONING.replace(".sql", ""),
      "20270305000100_history_check_validated",
      PARTITIONED.replace(".sql", ""),
    ]);
    // The service ran all along, and no statement of it waited past the bound.
    expect(during.intake).toBeGreaterThan(0);
    expect(during.claim).toBeGreaterThan(0);
    expect(traffic.claim.claimed).toBeGreaterThan(0);
    // None failed: they waited for the migration's short locks instead (a failed batch would
    // be sent again, and must still have been taken in).
    expect(traffic.claim.failures).toEqual([]);
    expect(traffic.intake.failures).toEqual([]);
    expect(traffic.intake.lost).toEqual([]);
    expect(traffic.intake.longestMs).toBeLessThan(bound);
    expect(traffic.claim.longestMs).toBeLessThan(bound);

    // Every row as it was, and each match taken in delivered once.
    const deliveriesAfter = await snapshot("deliveries", "id::text", live.pool, leases);
    const kept = new Map([...deliveriesBefore.keys()].map((id) => [id, deliveriesAfter.get(id)]));
    expect(kept).toEqual(deliveriesBefore);
    expect(await snapshot("attempts", "delivery_id || '/' || attempt", live.pool)).toEqual(
      attemptsBefore,
    );
    const { rows } = await live.pool.query<{ match_id: string; n: number }>(
      `SELECT match_id, count(*)::int AS n FROM deliveries WHERE match_id LIKE 'live\\_%'
        GROUP BY match_id`,
    );
    const byMatch = (a: { match_id: string }, b: { match_id: string }) =>
      a.match_id < b.match_id ? -1 : 1;
    expect(rows.sort(byMatch)).toEqual(
      traffic.intake.matches.map((match_id) => ({ match_id, n: 1 })).sort(byMatch),
    );
    expect(deliveriesAfter.size).toBe(deliveriesBefore.size + traffic.intake.matches.length);
  }, 60_000);
});
