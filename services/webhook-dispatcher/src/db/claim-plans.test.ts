import type { Pool, PoolClient } from "@th/db";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { listPartitions } from "@th/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WHOLE } from "../domain/shard.ts";
import { writeAttempts } from "./attempts.ts";
import { claimDeliveries, pendRetry, releaseDeliveries, unparkTenant } from "./deliveries.ts";
import { selectAttempts, selectDeliveryPage } from "./delivery-log.ts";
import { migrations } from "./migrations.ts";
import { completePartitionIndexes, DELIVERIES } from "./partitions.ts";

/** A partition with more rows than this is one a statement must reach by an index. */
const LARGE = 2_000;
const TENANTS = 60;

let db: TestDatabase;
let month: Date;

/**
 * Each month: many delivered rows (the bulk of a real table), a few hundred waiting ones over
 * many tenants, some parked and exhausted; the first partition (the table as it was) likewise.
 */
async function fill(createdFrom: Date | string, createdTo: Date): Promise<void> {
  await db.pool.query(
    `INSERT INTO deliveries (id, endpoint_id, tenant_id, watchlist_id, match_id, folio, event_type,
                             body, state, due_at, created_at, hold_until)
     SELECT gen_random_uuid(), 'ep_' || (g % $2), 'tn_' || (g % $2), 'wl_' || (g % $2),
            'm_' || g || '_' || extract(epoch FROM $1::timestamptz), '23-' || g, 'watchlist.match',
            '{}', CASE WHEN g % 100 = 0 THEN 'pending' WHEN g % 100 = 1 THEN 'retrying'
                       WHEN g % 100 = 2 THEN 'parked' WHEN g % 500 = 3 THEN 'exhausted'
                       ELSE 'complete' END,
            now() - interval '1 minute',
            $1::timestamptz - (g % 20000) * interval '1 minute',
            now() + interval '10 days'
       FROM generate_series(1, 20000) g`,
    [createdTo, TENANTS],
  );
  await db.pool.query(
    `INSERT INTO attempts (delivery_id, replay_no, attempt, attempted_at, state)
     SELECT id, 0, 1, created_at, state FROM deliveries
      WHERE created_at < $1 AND created_at >= $2::timestamptz`,
    [createdTo, createdFrom],
  );
}

beforeAll(async () => {
  db = await createTestDatabase([migrations]);
  const [first] = await listPartitions(db.pool, DELIVERIES);
  month = first?.to ?? new Date();
  await db.pool.query(
    `INSERT INTO endpoints (id, tenant_id, watchlist_id, url, events)
     SELECT 'ep_' || g, 'tn_' || g, 'wl_' || g, 'https://example.test/' || g, '{watchlist.match}'
       FROM generate_series(0, $1 - 1) g`,
    [TENANTS],
  );
  await db.pool.query(
    `INSERT INTO tenants (tenant_id, revision, tier, status, lead_views_per_month,
                          concurrent_webhooks, changed_at)
     SELECT 'tn_' || g, 1, 'team', 'active', 5000, 10, now() FROM generate_series(0, $1 - 1) g`,
    [TENANTS],
  );
  await fill("-infinity", new Date(month.getTime() - 1000));
  await fill(month, new Date(month.getTime() + 20 * 86_400_000));
  await completePartitionIndexes(db.pool, DELIVERIES);
  await db.pool.query("ANALYZE deliveries");
  await db.pool.query("ANALYZE attempts");
}, 120_000);
afterAll(() => db.drop());

type Queryable = Pick<PoolClient, "query">;
interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  Plans?: PlanNode[];
}

/** A pool that plans each statement it is given instead of running it. */
function planningPool(client: Queryable, plans: PlanNode[]): Pool {
  const query = async (
    config: string | { text: string; values?: unknown[] },
    values?: unknown[],
  ) => {
    const text = typeof config === "string" ? config : config.text;
    const params = typeof config === "string" ? values : config.values;
    const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${text}`, params);
    const [explained] = rows[0]["QUERY PLAN"] as { Plan: PlanNode }[];
    plans.push(explained?.Plan ?? { "Node Type": "none" });
    return { rows: [], rowCount: 0 };
  };
  return { query } as unknown as Pool;
}

/** The large partitions a plan reads whole. */
async function seqScansOnLarge(db: Queryable, plan: PlanNode): Promise<string[]> {
  const scanned: string[] = [];
  const walk = (node: PlanNode) => {
    if (node["Node Type"] === "Seq Scan" && node["Relation Name"]) {
      scanned.push(node["Relation Name"]);
    }
    node.Plans?.forEach(walk);
  };
  walk(plan);
  const { rows } = await db.query(
    "SELECT relname FROM pg_class WHERE relname = ANY($1) AND reltuples > $2",
    [scanned, LARGE],
  );
  return rows.map((row: { relname: string }) => row.relname).sort();
}

const claimInput = (now: Date) => ({
  now,
  limit: 256,
  held: new Map([["tn_1", 2]]),
  defaultConcurrency: 5,
  depth: 4,
  retrySweepGraceMs: 5_000,
  leaseMs: 20_000,
  share: { count: 3, index: 1 },
});

/** Every statement of the claim and of the writes guarded by a claimed row's lease. */
async function planDispatcherStatements(client: Queryable): Promise<PlanNode[]> {
  const plans: PlanNode[] = [];
  const pool = planningPool(client, plans);
  const now = new Date();
  const { rows } = await client.query("SELECT id FROM deliveries WHERE state = 'pending' LIMIT 3");
  const leased = rows.map((row: { id: string }) => ({ id: row.id, lease_token: row.id }));
  await claimDeliveries(pool, claimInput(now));
  await claimDeliveries(pool, { ...claimInput(now), share: WHOLE, held: new Map() });
  await releaseDeliveries(pool, leased, now);
  await pendRetry(pool, { id: leased[0]?.id ?? "", attempts: 1, replayNo: 0, dueAt: now });
  await unparkTenant(pool, "tn_7");
  await writeAttempts(pool, [
    {
      id: leased[0]?.id ?? "",
      leaseToken: leased[0]?.id ?? "",
      replayNo: 0,
      attempt: 1,
      attemptedAt: now,
      durationMs: 40,
      statusCode: 200,
      failure: null,
      error: null,
      state: "complete",
      dueAt: null,
      deadLetterReason: null,
      recordedAt: now,
      holdUntil: now,
      charge: true,
      events: [],
    },
  ]);
  await selectDeliveryPage(
    pool,
    { endpointId: "ep_3", tenantId: "tn_3", state: null, after: null },
    50,
  );
  await selectAttempts(pool, leased[0]?.id ?? "");
  return plans;
}

describe("the claim's plans on deliveries partitioned by month", () => {
  it("reach every large partition by an index, in the claim and in the writes of claimed rows", async () => {
    const { rows } = await db.pool.query<{ relname: string }>(
      "SELECT relname FROM pg_class WHERE relname LIKE 'deliveries_p%' AND relkind = 'r' AND reltuples > $1",
      [LARGE],
    );
    // Both the first partition and a monthly one are large.
    expect(rows).toHaveLength(2);
    const plans = await planDispatcherStatements(db.pool);
    expect(plans).toHaveLength(8);
    for (const plan of plans) {
      expect(await seqScansOnLarge(db.pool, plan)).toEqual([]);
    }
  });

  it("would catch a sequential scan: without the claim's index the check reports both partitions", async () => {
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      await client.query("DROP INDEX deliveries_due_by_tenant");
      const [claim] = await planDispatcherStatements(client);
      expect(await seqScansOnLarge(client, claim as PlanNode)).toHaveLength(2);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  });
});
