import { join } from "node:path";
import { createPool, type Pool } from "@th/db";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { createLogger } from "@th/telemetry";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createMetrics } from "./metrics.ts";
import {
  createRetention,
  deleteInBatches,
  dropExpiredPartitions,
  dropPartition,
  ensureMonthlyPartitions,
  listPartitions,
  type RetentionRule,
} from "./retention.ts";

const DAY = 86_400_000;
let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase([
    { schema: "retention_test", dir: join(import.meta.dirname, "fixtures", "retention") },
  ]);
  pool = db.pool;
});
afterAll(() => db.drop());

function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    service: "retention-test",
    level: "info",
    destination: { write: (line: string) => lines.push(JSON.parse(line)) },
  });
  return { lines, logger };
}

/** The events rule: rows older than `keepMs`, removed in keyed batches. */
function eventsRule(keepMs: number, statements: number[] = []): RetentionRule {
  return {
    table: "retention_test.events",
    keepMs,
    async sweep(db, now, limit) {
      const removed = await deleteInBatches(
        db,
        `DELETE FROM events WHERE id = ANY(ARRAY(
           SELECT id FROM events WHERE created_at < $1 ORDER BY created_at LIMIT $2))`,
        [new Date(now.getTime() - keepMs)],
        limit,
      );
      statements.push(removed);
      return removed;
    },
    async oldestRowAgeMs(db, now) {
      const { rows } = await db.query<{ oldest: Date | null }>(
        "SELECT min(created_at) AS oldest FROM events",
      );
      const oldest = rows[0]?.oldest;
      return oldest ? now.getTime() - oldest.getTime() : null;
    },
  };
}

async function insertEvents(count: number, ageMs: number): Promise<void> {
  await pool.query(
    `INSERT INTO events (created_at)
     SELECT now() - make_interval(secs => $2 / 1000.0) FROM generate_series(1, $1)`,
    [count, ageMs],
  );
}

async function count(table: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  return rows[0]?.n ?? 0;
}

async function partitionsOf(parent: string): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass ORDER BY 1`,
    [parent],
  );
  return rows.map((row) => row.name);
}

function metricLine(text: string, name: string, table: string): number | undefined {
  const line = text
    .split("\n")
    .find((entry) => entry.startsWith(`${name}{`) && entry.includes(`table="${table}"`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

beforeEach(async () => {
  await pool.query("TRUNCATE events");
  for (const name of await partitionsOf("history")) {
    await pool.query(`DROP TABLE ${name}`);
  }
});

describe("retention", () => {
  it("removes expired rows in batches no larger than the batch size, keeping the rest", async () => {
    await insertEvents(25, 10 * DAY);
    await insertEvents(5, DAY);
    const statements: number[] = [];
    const { logger } = capturingLogger();
    const retention = createRetention({
      pool,
      rules: [eventsRule(7 * DAY, statements)],
      metrics: createMetrics("retention-test"),
      logger,
      batchSize: 10,
    });
    const removed = await retention.runOnce();
    expect(removed.get("retention_test.events")).toBe(25);
    expect(statements).toEqual([10, 10, 5]);
    expect(await count("events")).toBe(5);
  });

  it("stops a rule after the round's cap of batches and goes on next round", async () => {
    await insertEvents(30, 10 * DAY);
    const statements: number[] = [];
    const retention = createRetention({
      pool,
      rules: [eventsRule(7 * DAY, statements)],
      metrics: createMetrics("retention-test"),
      logger: capturingLogger().logger,
      batchSize: 5,
      maxBatchesPerRound: 2,
    });
    expect((await retention.runOnce()).get("retention_test.events")).toBe(10);
    expect(statements).toEqual([5, 5]);
    expect(await count("events")).toBe(20);
    await retention.runOnce();
    expect(await count("events")).toBe(10);
  });

  it("creates monthly partitions idempotently and drops those wholly expired", async () => {
    const from = new Date("2027-01-15T00:00:00Z");
    await ensureMonthlyPartitions(pool, "history", from, 2);
    await ensureMonthlyPartitions(pool, "retention_test.history", from, 3);
    expect(await partitionsOf("history")).toEqual([
      "history_p202701",
      "history_p202702",
      "history_p202703",
      "history_p202704",
    ]);
    await pool.query(
      `INSERT INTO history (created_at) VALUES
         ('2027-01-03Z'), ('2027-01-31T23:59:59Z'), ('2027-02-10Z'), ('2027-03-01Z')`,
    );
    // The cutoff falls inside March: January and February end before it, March does not.
    const dropped = await dropExpiredPartitions(pool, "history", new Date("2027-03-05Z"));
    expect(dropped).toBe(3);
    expect(await partitionsOf("history")).toEqual(["history_p202703", "history_p202704"]);
    expect(await count("history")).toBe(1);
    expect(await dropExpiredPartitions(pool, "history", new Date("2027-03-05Z"))).toBe(0);
  });

  it("leaves a month another partition already covers to that partition", async () => {
    await pool.query(
      `CREATE TABLE history_before PARTITION OF history
         FOR VALUES FROM (MINVALUE) TO ('2027-02-01Z')`,
    );
    await ensureMonthlyPartitions(pool, "history", new Date("2027-01-10Z"), 1);
    expect(await partitionsOf("history")).toEqual(["history_before", "history_p202702"]);
    expect(await listPartitions(pool, "history")).toEqual([
      { name: "history_before", from: null, to: new Date("2027-02-01Z") },
      { name: "history_p202702", from: new Date("2027-02-01Z"), to: new Date("2027-03-01Z") },
    ]);
    // A partition of any name is dropped by its upper bound.
    await pool.query("INSERT INTO history (created_at) VALUES ('2026-05-01Z')");
    expect(await dropExpiredPartitions(pool, "history", new Date("2027-02-01Z"))).toBe(1);
    expect(await partitionsOf("history")).toEqual(["history_p202702"]);
  });

  it("reads a date-partitioned table's bounds as UTC midnights whatever the session's time zone", async () => {
    await pool.query(
      "CREATE TABLE IF NOT EXISTS daily (day date NOT NULL) PARTITION BY RANGE (day)",
    );
    await ensureMonthlyPartitions(pool, "daily", new Date("2027-01-10Z"), 1);
    await ensureMonthlyPartitions(pool, "history", new Date("2027-01-10Z"), 0);
    const database = new URL(db.url).pathname.slice(1);
    await pool.query(`ALTER DATABASE ${database} SET timezone = 'America/New_York'`);
    const eastern = createPool({ url: db.url, schema: "retention_test", max: 1 });
    try {
      expect((await eastern.query("SHOW timezone")).rows[0]?.TimeZone).toBe("America/New_York");
      expect(await listPartitions(eastern, "daily")).toEqual([
        { name: "daily_p202701", from: new Date("2027-01-01Z"), to: new Date("2027-02-01Z") },
        { name: "daily_p202702", from: new Date("2027-02-01Z"), to: new Date("2027-03-01Z") },
      ]);
      expect((await listPartitions(eastern, "history"))[0]).toEqual({
        name: "history_p202701",
        from: new Date("2027-01-01Z"),
        to: new Date("2027-02-01Z"),
      });
    } finally {
      await eastern.end();
      await pool.query(`ALTER DATABASE ${database} RESET timezone`);
    }
  });

  it("creates a month once when replicas ask for it at the same moment, failing none", async () => {
    await pool.query(
      "CREATE TABLE IF NOT EXISTS raced (at timestamptz NOT NULL) PARTITION BY RANGE (at)",
    );
    const from = new Date("2027-06-01Z");
    const outcomes = await Promise.allSettled(
      Array.from({ length: 8 }, () => ensureMonthlyPartitions(pool, "raced", from, 2)),
    );
    expect(outcomes.filter((outcome) => outcome.status === "rejected")).toEqual([]);
    expect(await partitionsOf("raced")).toEqual([
      "raced_p202706",
      "raced_p202707",
      "raced_p202708",
    ]);
  });

  it("keeps a partition its guard refuses, the guard asked while the table is locked", async () => {
    await ensureMonthlyPartitions(pool, "history", new Date("2027-01-01Z"), 1);
    await pool.query("INSERT INTO history (created_at) VALUES ('2027-01-02Z'), ('2027-01-03Z')");
    const writer = await pool.connect();
    let locked: boolean | undefined;
    try {
      const kept = await dropPartition(pool, "history", "history_p202701", async (client) => {
        // A writer cannot get in while the guard decides.
        await writer.query("SET lock_timeout = '100ms'");
        locked = await writer
          .query("INSERT INTO history (created_at) VALUES ('2027-01-04Z')")
          .then(() => false)
          .catch((error: Error) => /lock timeout/.test(error.message));
        const { rows } = await client.query("SELECT count(*)::int AS n FROM history_p202701");
        return rows[0].n === 0;
      });
      expect(kept).toBe(0);
    } finally {
      await writer.query("RESET lock_timeout");
      writer.release();
    }
    expect(locked).toBe(true);
    expect(await partitionsOf("history")).toContain("history_p202701");
    expect(await dropPartition(pool, "history", "history_p202701", async () => true)).toBe(2);
    expect(await dropPartition(pool, "history", "history_p202701")).toBe(0);
    expect(await partitionsOf("history")).toEqual(["history_p202702"]);
  });

  it("gives up dropping a partition a reader holds, instead of queueing behind it", async () => {
    await ensureMonthlyPartitions(pool, "history", new Date("2027-01-01Z"), 1);
    const reader = await pool.connect();
    try {
      await reader.query("BEGIN");
      await reader.query("SELECT count(*) FROM history");
      const started = Date.now();
      await expect(dropExpiredPartitions(pool, "history", new Date("2027-02-01Z"))).rejects.toThrow(
        /lock timeout/,
      );
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await reader.query("ROLLBACK");
      reader.release();
    }
    expect(await dropExpiredPartitions(pool, "history", new Date("2027-02-01Z"))).toBe(0);
    expect(await partitionsOf("history")).toEqual(["history_p202702"]);
  });

  it("exports rows removed, how far behind, the table's bytes and its oldest row's age", async () => {
    await insertEvents(4, 10 * DAY);
    const metrics = createMetrics("retention-test");
    let clock = new Date();
    const events = eventsRule(7 * DAY);
    // Measured before the events rule runs, it sees the rows 3 days past a 7-day horizon.
    const stuck: RetentionRule = {
      ...events,
      table: "stuck",
      relation: "events",
      sweep: async () => 0,
    };
    const retention = createRetention({
      pool,
      rules: [stuck, events],
      metrics,
      logger: capturingLogger().logger,
      now: () => clock,
    });
    await retention.runOnce();
    const scrape = async (name: string, table: string) =>
      metricLine(await metrics.registry.metrics(), name, table);
    expect(await scrape("th_retention_removed_rows_total", "retention_test.events")).toBe(4);
    expect(await scrape("th_retention_behind_seconds", "retention_test.events")).toBe(0);
    expect(await scrape("th_table_bytes", "retention_test.events")).toBeGreaterThan(8_192);
    const behind = (await scrape("th_retention_behind_seconds", "stuck")) ?? 0;
    expect(Math.abs(behind - 3 * 86_400)).toBeLessThan(60);
    const age = (await scrape("th_table_oldest_row_age_seconds", "stuck")) ?? 0;
    expect(Math.abs(age - 10 * 86_400)).toBeLessThan(60);
    // Rounds that stop running show retention falling further behind as the clock moves.
    clock = new Date(clock.getTime() + 3_600_000);
    expect(await scrape("th_retention_behind_seconds", "stuck")).toBeCloseTo(behind + 3_600, 0);
    expect(await scrape("th_table_oldest_row_age_seconds", "stuck")).toBeCloseTo(age + 3_600, 0);
  });

  it("logs a failing rule and still runs the others", async () => {
    await insertEvents(3, 10 * DAY);
    const { lines, logger } = capturingLogger();
    const metrics = createMetrics("retention-test");
    const broken: RetentionRule = {
      ...eventsRule(DAY),
      table: "broken",
      sweep: () => pool.query("DELETE FROM no_such_table").then(() => 0),
    };
    const retention = createRetention({
      pool,
      rules: [broken, eventsRule(7 * DAY)],
      metrics,
      logger,
    });
    const removed = await retention.runOnce();
    expect(removed.get("retention_test.events")).toBe(3);
    expect(removed.has("broken")).toBe(false);
    const failure = lines.find((line) => line.table === "broken");
    expect(failure?.msg).toMatch(/retention failed/);
    expect(String((failure?.err as { message?: string })?.message)).toMatch(/no_such_table/);
    const text = await metrics.registry.metrics();
    expect(metricLine(text, "th_retention_failures_total", "broken")).toBe(1);
  });

  it("waits on stop for the round that is running", async () => {
    await insertEvents(2, 10 * DAY);
    let release = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered = () => {};
    const inRound = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const base = eventsRule(7 * DAY);
    const slow: RetentionRule = {
      ...base,
      async sweep(db, now, limit) {
        entered();
        await gate;
        return base.sweep(db, now, limit);
      },
    };
    const retention = createRetention({
      pool,
      rules: [slow],
      metrics: createMetrics("retention-test"),
      logger: capturingLogger().logger,
      intervalMs: 10,
    });
    retention.start();
    await inRound;
    let stopped = false;
    const stopping = retention.stop().then(() => {
      stopped = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(await count("events")).toBe(0);
  });
});
