// Ingest runs are kept 90 days (decision 0394): the service's retention removes older ones in
// small batches, through the index on started_at.
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { ingestRunsRule } from "./ingest-runs.ts";
import { migrations } from "./migrations.ts";

const DAY_MS = 86_400_000;
const NOW = new Date();
const daysAgo = (days: number) => new Date(NOW.getTime() - days * DAY_MS);
let harness: TestHarness<Config>;

beforeAll(async () => {
  harness = await createTestHarness({ config: readConfig({}), migrations: [migrations] });
});
afterAll(() => harness.close());
beforeEach(async () => {
  await harness.pool.query("TRUNCATE ingest_runs");
});

async function insertRuns(startedAt: Date, count: number, finished = true): Promise<void> {
  await harness.pool.query(
    `INSERT INTO ingest_runs (ingest_id, source_file, kind, started_at, finished_at)
     SELECT 'ing_' || gen_random_uuid(), 'NAL23F202501.csv', 'nal', $1::timestamptz,
            CASE WHEN $3::boolean THEN $1::timestamptz END
       FROM generate_series(1, $2::int)`,
    [startedAt, count, finished],
  );
}

async function startedAts(): Promise<number[]> {
  const { rows } = await harness.pool.query<{ started_at: Date }>(
    "SELECT started_at FROM ingest_runs ORDER BY started_at",
  );
  return rows.map((row) => row.started_at.getTime());
}

describe("ingest run retention", () => {
  it("removes the runs started before the 90-day horizon, finished or not, and keeps the rest", async () => {
    await insertRuns(daysAgo(90.01), 2);
    await insertRuns(daysAgo(400), 1, false);
    await insertRuns(daysAgo(89.99), 3);
    const app = await buildApp(harness, { now: () => NOW });
    const removed = await app.retention.runOnce();
    expect(removed.get("parcels.ingest_runs")).toBe(3);
    expect(await startedAts()).toEqual(Array(3).fill(daysAgo(89.99).getTime()));
  });

  it("removes one batch a statement and reports the oldest run's age", async () => {
    await insertRuns(daysAgo(100), 25);
    await insertRuns(daysAgo(5), 1);
    const rule = ingestRunsRule(90 * DAY_MS);
    expect(await rule.oldestRowAgeMs(harness.pool, NOW)).toBe(100 * DAY_MS);
    expect(await rule.sweep(harness.pool, NOW, 10)).toBe(10);
    expect(await rule.sweep(harness.pool, NOW, 10)).toBe(10);
    expect(await rule.sweep(harness.pool, NOW, 10)).toBe(5);
    expect(await rule.sweep(harness.pool, NOW, 10)).toBe(0);
    expect(await rule.oldestRowAgeMs(harness.pool, NOW)).toBe(5 * DAY_MS);
  });

  it("finds a batch through the index on started_at, not by reading the table", async () => {
    await insertRuns(daysAgo(100), 20);
    await insertRuns(daysAgo(5), 3_000);
    await harness.pool.query("ANALYZE ingest_runs");
    const { rows } = await harness.pool.query<{ "QUERY PLAN": string }>(
      `EXPLAIN SELECT ingest_id FROM ingest_runs WHERE started_at < $1 ORDER BY started_at LIMIT $2`,
      [daysAgo(90), 1_000],
    );
    const plan = rows.map((row) => row["QUERY PLAN"]).join("\n");
    expect(plan).toContain("ingest_runs_started");
    expect(plan).not.toContain("Seq Scan");
  });
});
