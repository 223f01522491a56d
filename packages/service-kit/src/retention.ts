import { escapeIdentifier, type Pool, type PoolClient } from "@th/db";
import type { Logger } from "@th/telemetry";
import type { Metrics } from "./metrics.ts";

/**
 * One growing table's rule. `sweep` removes at most `limit` expired rows (or drops whole expired
 * partitions) and answers how many rows it removed; it must take no long lock.
 */
export interface RetentionRule {
  /** The table's name in metrics and logs, e.g. "dispatcher.deliveries". */
  table: string;
  /** The relation sized for th_table_bytes (partitions summed); `table` unless given. */
  relation?: string;
  /** How long rows are kept: for docs, and the behind-gauge unless `behindMs` is given. */
  keepMs: number;
  /** Work a round does once before sweeping, such as creating the coming partitions. */
  prepare?(pool: Pool, now: Date): Promise<void>;
  sweep(pool: Pool, now: Date, limit: number): Promise<number>;
  /** Age in ms of the table's oldest row, null when it is empty. */
  oldestRowAgeMs(pool: Pool, now: Date): Promise<number | null>;
  /**
   * `now` minus the earliest horizon of any row the table holds, in ms: positive when that row
   * is overdue, negative when none is yet, null when the table holds no row with a horizon. For
   * tables whose rows have horizons of their own (a hold that ends later); without it, the
   * oldest row's age minus `keepMs`.
   */
  behindMs?(pool: Pool, now: Date): Promise<number | null>;
}

export interface RetentionOptions {
  pool: Pool;
  rules: readonly RetentionRule[];
  metrics: Metrics;
  logger: Logger;
  /** Pause between rounds (the services' RETENTION_INTERVAL_MS). */
  intervalMs?: number;
  /** Rows a statement removes at most. */
  batchSize?: number;
  /** Batches a rule runs in one round at most; the rest waits for the next round. */
  maxBatchesPerRound?: number;
  /** The clock; the soak bench compresses time. */
  now?: () => Date;
}

export interface Retention {
  /** One round of every rule; answers the rows removed by table. */
  runOnce(): Promise<Map<string, number>>;
  start(): void;
  /** Stops the timer and waits for a running round to finish. */
  stop(): Promise<void>;
}

export const RETENTION_INTERVAL_MS = 60_000;
export const RETENTION_BATCH_SIZE = 1_000;
const MAX_BATCHES_PER_ROUND = 20;
/** Creating a month (its ATTACH) gives up after this long waiting for a lock, until the next round. */
const DDL_LOCK_TIMEOUT = "500ms";

/** What the last measurement of a table found, so a scrape can tell how stale it is. */
interface Measurement {
  at: number;
  oldestAgeMs: number | null;
  /** Signed, as `RetentionRule.behindMs` answers it. */
  behindMs: number | null;
  bytes: number;
}

/**
 * Runs one round of a statement: `sql` is a DELETE whose last parameter is the batch limit,
 * appended to `params`, and which removes at most that many rows, e.g.
 * `DELETE FROM t WHERE id = ANY(ARRAY(SELECT id FROM t WHERE created_at < $1 LIMIT $2))`
 * (a ctid equivalent must use `ctid = ANY(ARRAY(...))`, which plans as a TID scan, and on a
 * partitioned table must also match `tableoid`, since a ctid is unique only within a partition).
 * Answers how many rows it removed; the caller repeats it while batches come back full.
 */
export async function deleteInBatches(
  pool: Pool,
  sql: string,
  params: readonly unknown[],
  limit: number,
): Promise<number> {
  const result = await pool.query(sql, [...params, limit]);
  return result.rowCount ?? 0;
}

/** `parent` as schema and table: an unqualified name is in the pool's current schema. */
async function qualified(pool: Pool, parent: string): Promise<{ schema: string; table: string }> {
  const dot = parent.indexOf(".");
  if (dot >= 0) {
    return { schema: parent.slice(0, dot), table: parent.slice(dot + 1) };
  }
  const { rows } = await pool.query<{ schema: string }>("SELECT current_schema() AS schema");
  return { schema: rows[0]?.schema ?? "public", table: parent };
}

function monthStart(date: Date, plusMonths: number): Date {
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + plusMonths, 1));
}

/** `deliveries_p202701` for the month starting at `start`. */
export function monthlyPartitionName(table: string, start: Date): string {
  const month = String(start.getUTCMonth() + 1).padStart(2, "0");
  return `${table}_p${start.getUTCFullYear()}${month}`;
}

const MONTH_EXISTS_CODES = new Set(["42P17", "42P07", "42710", "23505"]);

/** Runs `work` in one short transaction that gives up rather than queue for a lock. */
async function inShortTransaction<T>(
  pool: Pool,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query(`SET LOCAL lock_timeout = '${DDL_LOCK_TIMEOUT}'`);
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}

/**
 * Runs `work` on one connection outside a transaction block (DETACH ... CONCURRENTLY refuses
 * one) whose statements give up rather than wait longer than `timeout` for a lock.
 */
async function withLockTimeout<T>(
  pool: Pool,
  timeout: string,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let result: T;
  try {
    await client.query(`SET lock_timeout = '${timeout}'`);
    result = await work(client);
  } catch (error) {
    await resetAndRelease(client);
    throw error;
  }
  await resetAndRelease(client);
  return result;
}

/** Gives the pool back a connection as it lent it; one that cannot be reset is closed. */
async function resetAndRelease(client: PoolClient): Promise<void> {
  try {
    await client.query("RESET lock_timeout");
    client.release();
  } catch (error) {
    client.release(error as Error);
  }
}

/**
 * Creates the monthly partitions `<table>_pYYYYMM` of `parent` (ranges on a timestamptz column)
 * from `from`'s month to `monthsAhead` months after it. Idempotent: existing partitions are
 * found in the catalog first, so a round that has nothing to create touches no table. A month
 * another partition already covers is left alone. Months a detach left as tables of their own
 * are attached back first (`reattachLeftMonths`).
 *
 * A month is made as a table of its own, shaped like `parent` (columns, defaults, checks,
 * indexes), and then attached, in one short transaction: the attach takes only a SHARE UPDATE
 * EXCLUSIVE lock on `parent`, which its readers and writers do not wait for, where CREATE TABLE
 * ... PARTITION OF takes an ACCESS EXCLUSIVE one that a long reader holds up and every later
 * statement on `parent` queues behind. The attach checks the new table against its bounds by
 * reading it, and it is empty. A DEFAULT partition would be read and locked exclusively by the
 * attach (and DETACH CONCURRENTLY refuses a table that has one): no user of the kit has one.
 * Nor has any a foreign key to or from a partitioned table: the detach would add triggers to the
 * other table, and dropping the month would then wait behind that table's readers.
 */
export async function ensureMonthlyPartitions(
  pool: Pool,
  parent: string,
  from: Date,
  monthsAhead: number,
): Promise<void> {
  await reattachLeftMonths(pool, parent);
  const { schema, table } = await qualified(pool, parent);
  const target = `${escapeIdentifier(schema)}.${escapeIdentifier(table)}`;
  const { rows } = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i
       JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass`,
    [target],
  );
  const existing = new Set(rows.map((row) => row.name));
  for (let month = 0; month <= monthsAhead; month++) {
    const start = monthStart(from, month);
    const name = monthlyPartitionName(table, start);
    if (existing.has(name)) {
      continue;
    }
    const partition = `${escapeIdentifier(schema)}.${escapeIdentifier(name)}`;
    try {
      await inShortTransaction(pool, async (client) => {
        await client.query(`CREATE TABLE ${partition} (LIKE ${target} INCLUDING ALL)`);
        await client.query(
          `ALTER TABLE ${target} ATTACH PARTITION ${partition}
             FOR VALUES FROM ('${start.toISOString()}') TO ('${monthStart(start, 1).toISOString()}')`,
        );
      });
    } catch (error) {
      // 42P17: the month overlaps a partition of another name (one attached from before); the
      // table made for it is rolled back with the attach. 42P07 and 23505: a table of that name
      // exists, another replica's month made at the same moment, or a month retention detached
      // and is about to drop (a writer of that expired month asked for it): done either way.
      // 42710: the other replica's table's row type, made at the same moment.
      if (!MONTH_EXISTS_CODES.has((error as { code?: string }).code ?? "")) {
        throw error;
      }
    }
  }
}

/** A partition bound's text as a time: with an offset as written, without one as UTC. */
const BOUND_AS_UTC = `(SELECT CASE WHEN t ~ '\\d:\\d\\d(\\.\\d+)?[+-]\\d\\d(:\\d\\d)?$' THEN t::timestamptz
                   ELSE t::timestamp AT TIME ZONE 'UTC' END FROM (SELECT $text AS t) AS b)`;

/** One partition of a range-partitioned table, with its bounds (null for MINVALUE/MAXVALUE). */
export interface PartitionRange {
  name: string;
  from: Date | null;
  to: Date | null;
}

/**
 * The partitions of `parent` with their bounds, read from the catalog (so a partition of any
 * name counts), in the order of their lower bounds; a DEFAULT partition is left out.
 */
export async function listPartitions(pool: Pool, parent: string): Promise<PartitionRange[]> {
  const { schema, table } = await qualified(pool, parent);
  // A timestamptz bound prints with its offset and is read as written; a date (or timestamp)
  // bound has none and means that day at 00:00 UTC, whatever the session's time zone.
  const { rows } = await pool.query<PartitionRange>(
    `SELECT name,
            ${BOUND_AS_UTC.replace("$text", `(regexp_match(bound, 'FROM \\(''([^'']+)''\\)'))[1]`)} AS "from",
            ${BOUND_AS_UTC.replace("$text", `(regexp_match(bound, 'TO \\(''([^'']+)''\\)'))[1]`)} AS "to"
       FROM (SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
               FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
              WHERE i.inhparent = $1::regclass) AS partitions
      WHERE bound <> 'DEFAULT'
      ORDER BY 2 NULLS FIRST, 3 NULLS LAST`,
    [`${escapeIdentifier(schema)}.${escapeIdentifier(table)}`],
  );
  return rows;
}

/** 55P03: lock_timeout; 57014: a statement canceled. */
const GAVE_UP_CODES = new Set(["55P03", "57014"]);

/**
 * How long the statements that drop a month, or put it back, may wait (see `dropPartition`):
 * none takes a lock the parent's readers and writers queue behind, and `DETACH ... FINALIZE`
 * waits for every older snapshot in the database, so a short limit would leave a month pending
 * round after round while any transaction in the database is a little old (or while autovacuum
 * works on the month, which yields only after `deadlock_timeout`).
 */
const DROP_LOCK_TIMEOUT = "30s";

/** How a month is dropped. */
export interface DropOptions {
  /** How long each statement may wait for a lock, as Postgres writes it ("30s"); DROP_LOCK_TIMEOUT. */
  lockTimeout?: string;
}

/** The lock timeout of `options`, checked: it is written into a SET statement. */
function dropLockTimeout(options: DropOptions): string {
  const timeout = options.lockTimeout ?? DROP_LOCK_TIMEOUT;
  if (!/^\d+(ms|s|min)$/.test(timeout)) {
    throw new RangeError(`not a lock timeout: ${timeout}`);
  }
  return timeout;
}

/**
 * Asks, for a partition of the month being dropped, whether it may go. `partition` is the month
 * as a table of its own (schema-qualified and quoted), already detached from the parent: the
 * guard reads it, not the parent, which no longer shows its rows.
 */
export type PartitionGuard = (client: PoolClient, partition: string) => Promise<boolean>;

/** A partition of `target`'s bound as written in ALTER TABLE, and whether a detach of it is pending. */
async function partitionOf(
  client: PoolClient,
  target: string,
  partition: string,
): Promise<{ bound: string; pending: boolean } | undefined> {
  const { rows } = await client.query<{ bound: string; pending: boolean }>(
    `SELECT pg_get_expr(c.relpartbound, c.oid) AS bound, i.inhdetachpending AS pending
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass AND i.inhrelid = to_regclass($2)`,
    [target, partition],
  );
  return rows[0];
}

/**
 * The rows of a detached month as the planner last counted them (what autovacuum's analyze
 * left), rather than a read of the whole month; counted only when it was never analyzed, which
 * autovacuum leaves only to tables of few rows (or when it is off).
 */
async function rowsOf(client: PoolClient, partition: string): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    "SELECT reltuples::float8 AS n FROM pg_class WHERE oid = $1::regclass",
    [partition],
  );
  const estimate = rows[0]?.n ?? -1;
  if (estimate >= 0) {
    return Math.round(estimate);
  }
  const counted = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${partition}`);
  return Number(counted.rows[0]?.n ?? 0);
}

/** Fails with a plain reason on a server without DETACH ... CONCURRENTLY (before PostgreSQL 14). */
async function requireConcurrentDetach(client: PoolClient): Promise<void> {
  const { rows } = await client.query<{ version: number }>(
    "SELECT current_setting('server_version_num')::int AS version",
  );
  if ((rows[0]?.version ?? 0) < 140_000) {
    throw new Error("dropping a month needs PostgreSQL 14 or later (DETACH ... CONCURRENTLY)");
  }
}

/**
 * Detaches a partition, or finishes its pending detach; false when another replica got there
 * first: the partition is gone, or its detach started meanwhile (that replica finishes it, or
 * a later round does).
 */
async function detach(
  client: PoolClient,
  target: string,
  partition: string,
  pending: boolean,
): Promise<boolean> {
  try {
    await requireConcurrentDetach(client);
    const how = pending ? "FINALIZE" : "CONCURRENTLY";
    await client.query(`ALTER TABLE ${target} DETACH PARTITION ${partition} ${how}`);
    return true;
  } catch (error) {
    // A wait that gave up (which may leave the detach pending) is this round's failure.
    if (GAVE_UP_CODES.has((error as { code?: string }).code ?? "")) {
      throw error;
    }
    const now = await partitionOf(client, target, partition);
    if (!now || now.pending !== pending) {
      return false;
    }
    throw error;
  }
}

/** The guard's answer, or its error: a guard that fails keeps the month too. */
function askGuard(
  client: PoolClient,
  guard: PartitionGuard,
  partition: string,
): Promise<{ drop: boolean; error?: unknown }> {
  return guard(client, partition).then(
    (drop) => ({ drop }),
    (error: unknown) => ({ drop: false, error }),
  );
}

/** Puts back a detached month (no reader or writer waits on its lock) and removes its mark. */
async function reattach(client: PoolClient, target: string, partition: string, bound: string) {
  await client.query(`ALTER TABLE ${target} ATTACH PARTITION ${partition} ${bound}`);
  await client.query(`COMMENT ON TABLE ${partition} IS NULL`);
}

/**
 * The comment a month carries from the start of its detach: what to attach it back to, should
 * the process detaching it end before it drops the month or puts it back (`reattachLeftMonths`).
 */
const DETACHING = "retention: detaching ";

interface DetachingMark {
  parent: string;
  bound: string;
}

async function markDetaching(client: PoolClient, partition: string, mark: DetachingMark) {
  const text = `${DETACHING}${JSON.stringify(mark)}`.replaceAll("'", "''");
  await client.query(`COMMENT ON TABLE ${partition} IS '${text}'`);
}

/**
 * Runs `work` holding the session's advisory lock on `partition`'s detach, so that one process
 * at a time detaches, drops or attaches back a month; answers `busy` when another holds it. A
 * session that ends lets go of it.
 */
async function whileMonthLocked<T>(
  client: PoolClient,
  partition: string,
  busy: T,
  work: () => Promise<T>,
): Promise<T> {
  const { rows } = await client.query<{ locked: boolean }>(
    "SELECT pg_try_advisory_lock(hashtext('retention.detach'), hashtext($1)) AS locked",
    [partition],
  );
  if (!rows[0]?.locked) {
    return busy;
  }
  try {
    return await work();
  } finally {
    await client
      .query("SELECT pg_advisory_unlock(hashtext('retention.detach'), hashtext($1))", [partition])
      .catch(() => undefined);
  }
}

/**
 * Drops one partition of `parent` without a lock its readers and writers wait for: `DETACH
 * PARTITION ... CONCURRENTLY` takes SHARE UPDATE EXCLUSIVE locks, then waits for the
 * transactions that use `parent` to end (new ones no longer see the month), then DROP TABLE
 * locks only the month, which nothing reads any more. Each wait gives up after DROP_LOCK_TIMEOUT
 * and the next round goes on: a detach interrupted after its first step leaves the month
 * "detach pending" (new statements no longer see it), which the next call finishes with
 * `DETACH PARTITION ... FINALIZE`. A write into the month while it goes either began before the
 * detach, which waits for it (its row goes with the month), or finds no partition and fails: a
 * caller whose writers may still write there moves their horizon first (the ledger) or passes a
 * guard.
 *
 * `guard`, when given, is asked once the month is detached, on the month as its own table: no
 * writer can change it any more (a row of that month written meanwhile finds no partition and
 * fails), so what the guard sees is what is dropped, as when the parent was locked exclusively
 * while the guard decided. False puts the month back, attached as it was (the detach left a
 * check of its bounds on it, so the attach reads no row); while it is detached, its rows are
 * out of sight. One process at a time works on a month (another answers 0); the month carries
 * a mark from the start of its detach, so one left as a table of its own by a process that ended
 * before it dropped the month or put it back is attached back by `reattachLeftMonths`.
 *
 * Answers the rows dropped (`rowsOf`); 0 when the guard kept it or another process dropped it
 * first.
 */
export async function dropPartition(
  pool: Pool,
  parent: string,
  name: string,
  guard?: PartitionGuard,
  options: DropOptions = {},
): Promise<number> {
  const { schema, table } = await qualified(pool, parent);
  const target = `${escapeIdentifier(schema)}.${escapeIdentifier(table)}`;
  const partition = `${escapeIdentifier(schema)}.${escapeIdentifier(name)}`;
  return withLockTimeout(pool, dropLockTimeout(options), (client) =>
    whileMonthLocked(client, partition, 0, async () => {
      const attached = await partitionOf(client, target, partition);
      if (!attached) {
        return 0;
      }
      if (!attached.pending) {
        await markDetaching(client, partition, { parent: target, bound: attached.bound });
      }
      if (!(await detach(client, target, partition, attached.pending))) {
        return 0;
      }
      const verdict = guard ? await askGuard(client, guard, partition) : { drop: true };
      if (!verdict.drop) {
        await reattach(client, target, partition, attached.bound);
        if ("error" in verdict) {
          throw verdict.error;
        }
        return 0;
      }
      const rows = await rowsOf(client, partition);
      await client.query(`DROP TABLE ${partition}`);
      return rows;
    }),
  );
}

/** A month's mark as `markDetaching` wrote it; null for any other comment of that prefix. */
function detachingMark(comment: string): DetachingMark | null {
  let mark: unknown;
  try {
    mark = JSON.parse(comment.slice(DETACHING.length));
  } catch {
    return null;
  }
  const { parent, bound } = (mark ?? {}) as Partial<DetachingMark>;
  // The bound goes into ALTER TABLE as written: one partition bound and nothing after it.
  return typeof parent === "string" &&
    typeof bound === "string" &&
    /^FOR VALUES FROM \([^;]+\) TO \([^;]+\)$/.test(bound)
    ? { parent, bound }
    : null;
}

/**
 * Attaches back every month of `parent` that a detach left as a table of its own, its process
 * ended (or its connection lost) before it dropped the month or put it back: the rows stay out
 * of sight until then, and the next round decides on the month again. A month another process
 * is detaching right now is left to it. Answers how many it attached.
 */
export async function reattachLeftMonths(
  pool: Pool,
  parent: string,
  options: DropOptions = {},
): Promise<number> {
  const { schema, table } = await qualified(pool, parent);
  const target = `${escapeIdentifier(schema)}.${escapeIdentifier(table)}`;
  const { rows } = await pool.query<{ schema: string; name: string; mark: string }>(
    `SELECT n.nspname AS schema, c.relname AS name, d.description AS mark
       FROM pg_description d
       JOIN pg_class c ON c.oid = d.objoid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE d.classoid = 'pg_class'::regclass AND d.objsubid = 0 AND starts_with(d.description, $1)
        AND c.relkind = 'r' AND NOT c.relispartition`,
    [DETACHING],
  );
  let attached = 0;
  for (const row of rows) {
    const mark = detachingMark(row.mark);
    if (mark?.parent !== target) {
      continue;
    }
    const partition = `${escapeIdentifier(row.schema)}.${escapeIdentifier(row.name)}`;
    attached += await withLockTimeout(pool, dropLockTimeout(options), (client) =>
      whileMonthLocked(client, partition, 0, async () => {
        const { rows: left } = await client.query(
          "SELECT 1 FROM pg_class WHERE oid = to_regclass($1) AND NOT relispartition",
          [partition],
        );
        if (left.length === 0) {
          return 0;
        }
        await reattach(client, target, partition, mark.bound);
        return 1;
      }),
    );
  }
  return attached;
}

/**
 * Drops every partition of `parent` whose upper bound is at or before `cutoff`, oldest first (a
 * MAXVALUE or default partition never is), once months a detach left as tables of their own are
 * attached back. Answers the rows dropped.
 */
export async function dropExpiredPartitions(
  pool: Pool,
  parent: string,
  cutoff: Date,
  options: DropOptions = {},
): Promise<number> {
  await reattachLeftMonths(pool, parent, options);
  let dropped = 0;
  for (const partition of await listPartitions(pool, parent)) {
    if (partition.to !== null && partition.to.getTime() <= cutoff.getTime()) {
      dropped += await dropPartition(pool, parent, partition.name, undefined, options);
    }
  }
  return dropped;
}

/**
 * Bytes of `relation` with its indexes and TOAST, its partitions' summed when partitioned (the
 * partition tree of a plain table is empty).
 */
async function relationBytes(pool: Pool, relation: string): Promise<number> {
  const { rows } = await pool.query<{ bytes: string | null }>(
    `SELECT coalesce(
       (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree($1::regclass)),
       pg_total_relation_size($1::regclass))::bigint AS bytes`,
    [relation],
  );
  return Number(rows[0]?.bytes ?? 0);
}

/** What the rounds learnt of each table. */
interface Measured {
  /** The last measurement of each table measured at least once. */
  tables: Map<string, Measurement>;
  /** When the first round of a table not yet measured failed to measure it. */
  failingSince: Map<string, number>;
}

function createInstruments(metrics: Metrics, measured: Measured, now: () => Date) {
  // Between rounds the rows age with the clock: rounds that stop running show as retention
  // falling further behind, not as the value the last round left.
  const elapsed = (m: { at: number }) => Math.max(0, now().getTime() - m.at);
  const removed = metrics.counter(
    "th_retention_removed_rows_total",
    "Rows retention removed, by table (a month dropped whole counts as the planner last counted it)",
    ["table"] as const,
  );
  const failures = metrics.counter(
    "th_retention_failures_total",
    "Retention rounds of a table that failed (retried next round)",
    ["table"] as const,
  );
  metrics.gauge(
    "th_retention_behind_seconds",
    "How far the most overdue row of a table is past its retention horizon (0 when none is); " +
      "for a table no round could measure yet, how long its rounds have been failing",
    ["table"] as const,
    (gauge) => {
      for (const [table, m] of measured.tables) {
        const behind = m.behindMs === null ? 0 : Math.max(0, m.behindMs + elapsed(m));
        gauge.set({ table }, behind / 1000);
      }
      // What a rule that never got through is behind is unknown, but at least as long as it
      // has failed: a value that grows lets the alert fire, where a missing series never would.
      for (const [table, at] of measured.failingSince) {
        gauge.set({ table }, elapsed({ at }) / 1000);
      }
    },
  );
  metrics.gauge(
    "th_table_oldest_row_age_seconds",
    "Age of the oldest row of a table",
    ["table"] as const,
    (gauge) => {
      for (const [table, m] of measured.tables) {
        if (m.oldestAgeMs !== null) {
          gauge.set({ table }, (m.oldestAgeMs + elapsed(m)) / 1000);
        }
      }
    },
  );
  metrics.gauge(
    "th_table_bytes",
    "Bytes of a table with its indexes and TOAST, partitions summed",
    ["table"] as const,
    (gauge) => {
      for (const [table, m] of measured.tables) {
        gauge.set({ table }, m.bytes);
      }
    },
  );
  return { removed, failures };
}

type Instruments = ReturnType<typeof createInstruments>;

/** A rule's batches until one comes back short or the round's cap is reached. */
async function sweepRule(
  pool: Pool,
  rule: RetentionRule,
  now: Date,
  batchSize: number,
  maxBatches: number,
): Promise<number> {
  await rule.prepare?.(pool, now);
  let total = 0;
  for (let batch = 0; batch < maxBatches; batch++) {
    const removed = await rule.sweep(pool, now, batchSize);
    total += removed;
    if (removed < batchSize) {
      break;
    }
  }
  return total;
}

async function measureRule(pool: Pool, rule: RetentionRule, now: Date): Promise<Measurement> {
  const oldestAgeMs = await rule.oldestRowAgeMs(pool, now);
  const behindMs = rule.behindMs
    ? await rule.behindMs(pool, now)
    : oldestAgeMs === null
      ? null
      : oldestAgeMs - rule.keepMs;
  const bytes = await relationBytes(pool, rule.relation ?? rule.table);
  return { at: now.getTime(), oldestAgeMs, behindMs, bytes };
}

/**
 * One rule's round: it sweeps, then is measured even when the sweep failed (the rows it left
 * still age, and the gauges show it). A failure of either is logged and counted once.
 */
async function runRule(
  options: Required<Omit<RetentionOptions, "metrics">>,
  rule: RetentionRule,
  instruments: Instruments,
  measured: Measured,
): Promise<number | undefined> {
  const { pool, logger } = options;
  let removed: number | undefined;
  let failure: { error: unknown } | undefined;
  try {
    const now = options.now();
    removed = await sweepRule(pool, rule, now, options.batchSize, options.maxBatchesPerRound);
    instruments.removed.inc({ table: rule.table }, removed);
    if (removed > 0) {
      logger.info({ table: rule.table, removed }, "retention removed expired rows");
    }
  } catch (error) {
    failure = { error };
  }
  try {
    measured.tables.set(rule.table, await measureRule(pool, rule, options.now()));
    measured.failingSince.delete(rule.table);
  } catch (error) {
    failure ??= { error };
    if (!measured.tables.has(rule.table) && !measured.failingSince.has(rule.table)) {
      measured.failingSince.set(rule.table, options.now().getTime());
    }
  }
  if (failure) {
    instruments.failures.inc({ table: rule.table });
    logger.warn({ err: failure.error, table: rule.table }, "retention failed; will retry");
  }
  return removed;
}

/**
 * One round: each rule in turn. A rule that fails is logged and counted, and the others still
 * run; the next round tries it again.
 */
async function runRound(
  options: Required<Omit<RetentionOptions, "metrics">>,
  instruments: Instruments,
  measured: Measured,
): Promise<Map<string, number>> {
  const removedByTable = new Map<string, number>();
  for (const rule of options.rules) {
    const removed = await runRule(options, rule, instruments, measured);
    if (removed !== undefined) {
      removedByTable.set(rule.table, removed);
    }
  }
  return removedByTable;
}

/**
 * Removes what each table's rule says has expired, a round every `intervalMs` after the previous
 * one settled, in batches so no statement holds locks long, and exports per table the rows
 * removed, how far behind retention is, the table's bytes and its oldest row's age. Replicas
 * each run it: the statements are idempotent (a row two replicas pick is deleted once).
 */
export function createRetention(options: RetentionOptions): Retention {
  const settings = {
    pool: options.pool,
    rules: options.rules,
    logger: options.logger,
    intervalMs: options.intervalMs ?? RETENTION_INTERVAL_MS,
    batchSize: options.batchSize ?? RETENTION_BATCH_SIZE,
    maxBatchesPerRound: options.maxBatchesPerRound ?? MAX_BATCHES_PER_ROUND,
    now: options.now ?? (() => new Date()),
  };
  const measured: Measured = { tables: new Map(), failingSince: new Map() };
  const instruments = createInstruments(options.metrics, measured, settings.now);
  let running: Promise<Map<string, number>> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = true;

  function runOnce(): Promise<Map<string, number>> {
    // Rounds never overlap: one asked for while another runs starts when it ends.
    const round = (running ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => runRound(settings, instruments, measured));
    running = round;
    const settle = () => {
      if (running === round) {
        running = undefined;
      }
    };
    round.then(settle, settle);
    return round;
  }

  function schedule(): void {
    if (stopped) {
      return;
    }
    timer = setTimeout(() => {
      void runOnce()
        .catch(() => undefined)
        .finally(schedule);
    }, settings.intervalMs);
    timer.unref();
  }

  return {
    runOnce,
    start() {
      if (stopped) {
        stopped = false;
        schedule();
      }
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => undefined);
    },
  };
}
