import { randomUUID } from "node:crypto";
import { copyFile, mkdtemp, readdir, rm } from "node:fs/promises";
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
async function fillPreviousSchema(): Promise<void> {
  const pool = db.pool;
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
       FROM generate_series(1, 600) g`,
    [states],
  );
  await pool.query(
    `INSERT INTO attempts (delivery_id, replay_no, attempt, attempted_at, duration_ms,
                           status_code, state)
     SELECT d.id, 0, a, d.created_at + a * interval '1 second', 40, 500, 'retrying'
       FROM deliveries d CROSS JOIN generate_series(1, 2) a`,
  );
}

/** Rows as JSON, without the reply column a later migration drops (decision 0331). */
async function snapshot(table: string, key: string): Promise<Map<string, string>> {
  const { rows } = await db.pool.query<{ key: string; row: string }>(
    `SELECT ${key} AS key, (to_jsonb(t) - 'response_excerpt')::text AS row FROM ${table} t`,
  );
  return new Map(rows.map((row) => [row.key, row.row]));
}

describe("the migration that partitions deliveries and attempts by month", () => {
  let deliveriesBefore: Map<string, string>;
  let attemptsBefore: Map<string, string>;

  beforeAll(async () => {
    await fillPreviousSchema();
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
