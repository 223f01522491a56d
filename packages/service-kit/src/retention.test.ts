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
  reattachLeftMonths,
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

const FAILURES = "th_retention_failures_total";
const BEHIND = "th_retention_behind_seconds";
const REMOVED = "th_retention_removed_rows_total";

/** A pool of its own, as another process's sessions on the same tables. */
function otherSessions(): Pool {
  return createPool({ url: db.url, schema: "retention_test", max: 1 });
}

/**
 * A drop that gives up half a second into a wait, so a test's long reader fails it at once; in
 * production it waits up to 30 s, which no reader or writer of the table waits behind.
 */
const GIVE_UP_SOON = { lockTimeout: "500ms" };

/**
 * Runs `work` while a long transaction holds what it read of history (an open REPEATABLE READ
 * one), and meanwhile another process reads the table and writes a month that stays, one
 * statement after another (at least five) until `work` settles. Answers how often that process
 * was seen waiting for a lock: Postgres's own account, sampled every 10 ms, which a loaded
 * machine does not inflate as it does a statement's time.
 */
async function whileLongReaderHolds(work: () => Promise<unknown>): Promise<{ lockWaits: number }> {
  const reader = await pool.connect();
  const other = otherSessions();
  let sampling = true;
  try {
    await reader.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
    await reader.query("SELECT count(*) FROM history");
    const otherPid = (await other.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]
      ?.pid;
    let lockWaits = 0;
    const sampler = (async () => {
      while (sampling) {
        const { rows } = await pool.query<{ waiting: boolean }>(
          "SELECT wait_event_type = 'Lock' AS waiting FROM pg_stat_activity WHERE pid = $1",
          [otherPid],
        );
        lockWaits += rows[0]?.waiting ? 1 : 0;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    let settled = false;
    // Its outcome is the test's to check; here it only ends the statements.
    const done = work()
      .catch(() => undefined)
      .finally(() => {
        settled = true;
      });
    for (let statement = 0; !settled || statement < 5; statement++) {
      await (statement % 2 === 0
        ? other.query("SELECT count(*) FROM history")
        : other.query("INSERT INTO history (created_at) VALUES ('2027-02-15Z')"));
    }
    await done;
    sampling = false;
    await sampler;
    return { lockWaits };
  } finally {
    sampling = false;
    await reader.query("ROLLBACK");
    reader.release();
    await other.end();
  }
}

async function detachPending(parent: string): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass AND i.inhdetachpending ORDER BY 1`,
    [parent],
  );
  return rows.map((row) => row.name);
}

async function exists(table: string): Promise<boolean> {
  const { rows } = await pool.query("SELECT to_regclass($1) IS NOT NULL AS found", [table]);
  return rows[0].found;
}

function metricLine(text: string, name: string, table: string): number | undefined {
  const line = text
    .split("\n")
    .find((entry) => entry.startsWith(`${name}{`) && entry.includes(`table="${table}"`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

beforeEach(async () => {
  await pool.query("TRUNCATE events");
  // Months detached and left standalone too.
  const { rows } = await pool.query<{ name: string }>(
    `SELECT relname AS name FROM pg_class
      WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r'
        AND relname LIKE 'history\\_p%'`,
  );
  for (const name of [...(await partitionsOf("history")), ...rows.map((row) => row.name)]) {
    await pool.query(`DROP TABLE IF EXISTS ${name}`);
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

  it("asks the guard on the month once detached, where no write can reach it, and puts back a month it refuses", async () => {
    await ensureMonthlyPartitions(pool, "history", new Date("2027-01-01Z"), 1);
    await pool.query("INSERT INTO history (created_at) VALUES ('2027-01-02Z'), ('2027-01-03Z')");
    const other = otherSessions();
    let write: string | undefined;
    let read: number | undefined;
    let seen: number | undefined;
    try {
      const kept = await dropPartition(
        pool,
        "history",
        "history_p202701",
        async (client, month) => {
          // A row of the month written while the guard decides fails rather than go unseen, and
          // the rest of the table is read and written as usual.
          write = await other
            .query("INSERT INTO history (created_at) VALUES ('2027-01-04Z')")
            .then(() => "written")
            .catch((error: Error) => error.message);
          await other.query("INSERT INTO history (created_at) VALUES ('2027-02-04Z')");
          read = (await other.query("SELECT count(*)::int AS n FROM history")).rows[0].n;
          seen = (await client.query(`SELECT count(*)::int AS n FROM ${month}`)).rows[0].n;
          return seen === 0;
        },
      );
      expect(kept).toBe(0);
    } finally {
      await other.end();
    }
    expect(write).toMatch(/no partition of relation "history" found for row/);
    expect(read).toBe(1);
    expect(seen).toBe(2);
    // Put back with its rows, and found by the next round.
    expect(await partitionsOf("history")).toEqual(["history_p202701", "history_p202702"]);
    expect(await count("history")).toBe(3);
    expect(await dropPartition(pool, "history", "history_p202701", async () => true)).toBe(2);
    expect(await dropPartition(pool, "history", "history_p202701")).toBe(0);
    expect(await partitionsOf("history")).toEqual(["history_p202702"]);
  });

  it("drops a month once when replicas drop it at the same moment, failing none", async () => {
    for (let round = 0; round < 5; round++) {
      await ensureMonthlyPartitions(pool, "history", new Date("2027-01-01Z"), 1);
      await pool.query("INSERT INTO history (created_at) VALUES ('2027-01-02Z')");
      const outcomes = await Promise.allSettled(
        Array.from({ length: 3 }, () => dropPartition(pool, "history", "history_p202701")),
      );
      expect(outcomes.filter((outcome) => outcome.status === "rejected")).toEqual([]);
      expect(
        outcomes.map((outcome) => (outcome.status === "fulfilled" ? outcome.value : -1)).sort(),
      ).toEqual([0, 0, 1]);
      expect(await partitionsOf("history")).toEqual(["history_p202702"]);
    }
  });

  it("puts a month back when its guard fails, and the round fails", async () => {
    await ensureMonthlyPartitions(pool, "history", new Date("2027-01-01Z"), 0);
    await pool.query("INSERT INTO history (created_at) VALUES ('2027-01-02Z')");
    await expect(
      dropPartition(pool, "history", "history_p202701", async (client) => {
        await client.query("SELECT 1 FROM no_such_table");
        return true;
      }),
    ).rejects.toThrow(/no_such_table/);
    expect(await partitionsOf("history")).toEqual(["history_p202701"]);
    expect(await count("history")).toBe(1);
  });

  it("makes a month while a long reader holds the table, and no other reader or writer waits", async () => {
    await ensureMonthlyPartitions(pool, "history", new Date("2027-01-01Z"), 1);
    const { lockWaits } = await whileLongReaderHolds(() =>
      ensureMonthlyPartitions(pool, "history", new Date("2027-02-01Z"), 1),
    );
    expect(lockWaits).toBe(0);
    expect(await partitionsOf("history")).toEqual([
      "history_p202701",
      "history_p202702",
      "history_p202703",
    ]);
  });

  it("drops a month while a long reader holds the table, and no other reader or writer waits: on the round after the reader ends", async () => {
    await ensureMonthlyPartitions(pool, "history", new Date("2027-01-01Z"), 1);
    await pool.query("INSERT INTO history (created_at) VALUES ('2027-01-02Z'), ('2027-02-02Z')");
    const rule: RetentionRule = {
      table: "retention_test.history",
      keepMs: 0,
      sweep: (db) => dropExpiredPartitions(db, "history", new Date("2027-02-01Z"), GIVE_UP_SOON),
      oldestRowAgeMs: async () => null,
    };
    const metrics = createMetrics("retention-test");
    const retention = createRetention({
      pool,
      rules: [rule],
      metrics,
      logger: capturingLogger().logger,
    });
    const { lockWaits } = await whileLongReaderHolds(() => retention.runOnce());
    expect(lockWaits).toBe(0);
    // The drop waited for the reader, gave up and was left to the next round.
    const scrape = async (name: string) =>
      metricLine(await metrics.registry.metrics(), name, rule.table);
    expect(await scrape(FAILURES)).toBe(1);
    await retention.runOnce();
    expect(await partitionsOf("history")).toEqual(["history_p202702"]);
    expect(await scrape(REMOVED)).toBe(1);
  });

  it("finishes on a later round a drop a long reader held up, the month out of sight meanwhile", async () => {
    await ensureMonthlyPartitions(pool, "history", new Date("2027-01-01Z"), 1);
    await pool.query("INSERT INTO history (created_at) VALUES ('2027-01-02Z'), ('2027-01-03Z')");
    const reader = await pool.connect();
    try {
      await reader.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
      await reader.query("SELECT count(*) FROM history");
      await expect(
        dropPartition(pool, "history", "history_p202701", undefined, GIVE_UP_SOON),
      ).rejects.toThrow(/lock timeout/);
      expect(await detachPending("history")).toEqual(["history_p202701"]);
      // New statements no longer see the month; the reader still does, and a round that makes
      // months leaves it alone.
      expect(await count("history")).toBe(0);
      expect(await reader.query("SELECT count(*)::int AS n FROM history")).toMatchObject({
        rows: [{ n: 2 }],
      });
      await ensureMonthlyPartitions(pool, "history", new Date("2027-01-01Z"), 1);
      // Still held: finishing it gives up too, and leaves it pending.
      await expect(
        dropExpiredPartitions(pool, "history", new Date("2027-02-01Z"), GIVE_UP_SOON),
      ).rejects.toThrow(/lock timeout/);
      expect(await detachPending("history")).toEqual(["history_p202701"]);
    } finally {
      await reader.query("ROLLBACK");
      reader.release();
    }
    expect(await dropExpiredPartitions(pool, "history", new Date("2027-02-01Z"))).toBe(2);
    expect(await partitionsOf("history")).toEqual(["history_p202702"]);
    expect(await exists("history_p202701")).toBe(false);
  });

  it("puts back a month left detach-pending that its guard then keeps", async () => {
    await ensureMonthlyPartitions(pool, "history", new Date("2027-01-01Z"), 0);
    await pool.query("INSERT INTO history (created_at) VALUES ('2027-01-02Z')");
    const reader = await pool.connect();
    try {
      await reader.query("BEGIN ISOLATION LEVEL REPEATABLE READ");
      await reader.query("SELECT count(*) FROM history");
      await expect(
        dropPartition(pool, "history", "history_p202701", undefined, GIVE_UP_SOON),
      ).rejects.toThrow(/lock timeout/);
    } finally {
      await reader.query("ROLLBACK");
      reader.release();
    }
    expect(await detachPending("history")).toEqual(["history_p202701"]);
    expect(await dropPartition(pool, "history", "history_p202701", async () => false)).toBe(0);
    expect(await detachPending("history")).toEqual([]);
    expect(await partitionsOf("history")).toEqual(["history_p202701"]);
    expect(await count("history")).toBe(1);
  });

  it("attaches back a month whose detach lost its connection before it dropped it or put it back, and decides on it again", async () => {
    await ensureMonthlyPartitions(pool, "history", new Date("2027-01-01Z"), 1);
    await pool.query("INSERT INTO history (created_at) VALUES ('2027-01-02Z'), ('2027-01-03Z')");
    // The connection ends while the guard decides: the month is left detached, its rows out of
    // sight.
    await expect(
      dropPartition(pool, "history", "history_p202701", async (client) => {
        await client.query("SELECT pg_terminate_backend(pg_backend_pid())");
        return true;
      }),
    ).rejects.toThrow();
    expect(await partitionsOf("history")).toEqual(["history_p202702"]);
    expect(await exists("history_p202701")).toBe(true);
    expect(await count("history")).toBe(0);
    // The next round puts it back before deciding, and then drops it.
    await ensureMonthlyPartitions(pool, "history", new Date("2027-01-01Z"), 1);
    expect(await partitionsOf("history")).toEqual(["history_p202701", "history_p202702"]);
    expect(await count("history")).toBe(2);
    expect(await reattachLeftMonths(pool, "history")).toBe(0);
    expect(await dropExpiredPartitions(pool, "history", new Date("2027-02-01Z"))).toBe(2);
    expect(await exists("history_p202701")).toBe(false);
  });

  it("leaves a month another process is detaching to it", async () => {
    await ensureMonthlyPartitions(pool, "history", new Date("2027-01-01Z"), 0);
    await pool.query("INSERT INTO history (created_at) VALUES ('2027-01-02Z')");
    let recovered: number | undefined;
    let dropped: number | undefined;
    const kept = await dropPartition(pool, "history", "history_p202701", async () => {
      recovered = await reattachLeftMonths(pool, "history");
      dropped = await dropPartition(pool, "history", "history_p202701");
      return false;
    });
    expect([kept, recovered, dropped]).toEqual([0, 0, 0]);
    expect(await partitionsOf("history")).toEqual(["history_p202701"]);
    expect(await count("history")).toBe(1);
  });

  it("answers the rows of a dropped month from the planner's count of it, without reading it", async () => {
    await ensureMonthlyPartitions(pool, "history", new Date("2027-01-01Z"), 0);
    await pool.query(
      "INSERT INTO history (created_at) SELECT '2027-01-02Z' FROM generate_series(1, 300)",
    );
    await pool.query("ANALYZE history_p202701");
    // Rows the planner has not counted yet are not read to be counted.
    await pool.query("INSERT INTO history (created_at) VALUES ('2027-01-03Z')");
    expect(await dropPartition(pool, "history", "history_p202701")).toBe(300);
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

  it("exports how far behind a table is whose rounds always fail, so its alert can fire", async () => {
    await insertEvents(2, 10 * DAY);
    const metrics = createMetrics("retention-test");
    let clock = new Date();
    const events = eventsRule(7 * DAY);
    const fail = () => pool.query("SELECT 1 FROM no_such_table").then(() => 0);
    // One cannot remove its rows but can still measure them, the other can do neither.
    const stuck: RetentionRule = { ...events, table: "stuck", relation: "events", sweep: fail };
    const broken: RetentionRule = {
      ...events,
      table: "broken",
      sweep: fail,
      oldestRowAgeMs: () => fail().then(() => null),
    };
    const retention = createRetention({
      pool,
      rules: [stuck, broken],
      metrics,
      logger: capturingLogger().logger,
      now: () => clock,
    });
    const scrape = async (name: string, table: string) =>
      metricLine(await metrics.registry.metrics(), name, table);
    await retention.runOnce();
    expect(Math.abs(((await scrape(BEHIND, "stuck")) ?? 0) - 3 * 86_400)).toBeLessThan(60);
    expect(await scrape(BEHIND, "broken")).toBe(0);
    clock = new Date(clock.getTime() + 2 * DAY);
    await retention.runOnce();
    expect(Math.abs(((await scrape(BEHIND, "stuck")) ?? 0) - 5 * 86_400)).toBeLessThan(60);
    expect(await scrape(BEHIND, "broken")).toBe(2 * 86_400);
    expect(await scrape(FAILURES, "stuck")).toBe(2);
    expect(await scrape(FAILURES, "broken")).toBe(2);
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
