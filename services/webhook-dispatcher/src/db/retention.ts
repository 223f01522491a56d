// Retention of deliveries and their attempts (decision 0392): a month's partition is dropped once
// nothing in it is kept; a month pinned past its deadline by kept rows has its expired rows
// deleted in batches. The rules' times are in domain/retention.ts.
import type { Pool, PoolClient } from "@th/db";
import {
  deleteInBatches,
  dropPartition,
  listPartitions,
  type RetentionRule,
} from "@th/service-kit";
import {
  fromParam,
  type Horizons,
  horizonsAt,
  type MonthRange,
  monthStage,
  monthsToSweep,
  overdueBefore,
  pastDeadlineMs,
} from "../domain/retention.ts";
import { HOLD_MS } from "../domain/schedule.ts";
import {
  ATTEMPTS,
  completePartitionIndexes,
  DELIVERIES,
  ensureDeliveryMonths,
} from "./partitions.ts";

type Queryable = Pool | PoolClient;

function horizonParams(now: Date): [Date, Date, Date, Date] {
  const h: Horizons = horizonsAt(now);
  return [h.completeHeldUntil, h.deadLetterHeldUntil, h.parkedCreatedBefore, now];
}

/**
 * Rows of the month [$1, $2) in `table` (deliveries, or the month detached from it) that must
 * stay at $6, each kind found by an index: waiting ones (pending, retrying, exhausted), parked
 * ones younger than their keep or leased right now, and completed ones and dead letters within
 * their hold ($3, $4: the hold end each must pass).
 */
const keptSql = (table: string) => `
SELECT EXISTS (SELECT 1 FROM ${table} WHERE created_at >= $1 AND created_at < $2
                 AND state IN ('pending', 'retrying', 'exhausted'))
    OR EXISTS (SELECT 1 FROM ${table} WHERE created_at >= $1 AND created_at < $2
                 AND state = 'parked' AND (created_at >= $5 OR lease_until > $6))
    OR EXISTS (SELECT 1 FROM ${table} WHERE created_at >= $1 AND created_at < $2
                 AND state = 'complete' AND hold_until > $3)
    OR EXISTS (SELECT 1 FROM ${table} WHERE created_at >= $1 AND created_at < $2
                 AND state = 'dead_letter' AND hold_until > $4) AS found`;

/** A row past its horizon, as a condition on `d`: $2/$3 hold ends, $4 parked keep, $5 now. */
const EXPIRED = `((d.state = 'complete' AND d.hold_until <= $2)
   OR (d.state = 'dead_letter' AND d.hold_until <= $3)
   OR (d.state IN ('complete', 'dead_letter') AND d.hold_until IS NULL)
   OR (d.state = 'parked' AND d.created_at < $4 AND (d.lease_until IS NULL OR d.lease_until <= $5)))`;

/** Whether the month [$1, $2) holds a row past its horizon ($3.. as in EXPIRED, shifted by one). */
const EXPIRED_SQL = `
SELECT EXISTS (SELECT 1 FROM deliveries d WHERE d.created_at >= $1 AND d.created_at < $6
                 AND ${EXPIRED}) AS found`;

/**
 * One batch of expired deliveries created before $1, each kind read in index order so a batch
 * stops at its limit ($6) instead of collecting the whole month. The delete checks the row again:
 * a parked one released meanwhile stays.
 */
const DELETE_EXPIRED_SQL = `
WITH doomed AS (
  (SELECT id, created_at FROM deliveries
    WHERE created_at < $1 AND state = 'complete' AND hold_until <= $2 ORDER BY hold_until LIMIT $6)
  UNION ALL
  (SELECT id, created_at FROM deliveries
    WHERE created_at < $1 AND state = 'dead_letter' AND hold_until <= $3 ORDER BY hold_until LIMIT $6)
  UNION ALL
  (SELECT id, created_at FROM deliveries
    WHERE created_at < $1 AND state IN ('complete', 'dead_letter') AND hold_until IS NULL LIMIT $6)
  UNION ALL
  (SELECT id, created_at FROM deliveries
    WHERE created_at < $1 AND state = 'parked' AND created_at < $4
      AND (lease_until IS NULL OR lease_until <= $5) LIMIT $6)
)
DELETE FROM deliveries d USING (SELECT * FROM doomed LIMIT $6) x
 WHERE d.id = x.id AND d.created_at = x.created_at AND ${EXPIRED}`;

async function monthHolds(db: Queryable, sql: string, params: unknown[]): Promise<boolean> {
  const { rows } = await db.query<{ found: boolean }>(sql, params);
  return rows[0]?.found === true;
}

/** Whether anything in the month must stay at `now`; read in `table`, deliveries unless given. */
function holdsKept(
  db: Queryable,
  month: MonthRange,
  now: Date,
  table = DELIVERIES,
): Promise<boolean> {
  const [complete, deadLetter, parked] = horizonParams(now);
  const params = [fromParam(month), month.to, complete, deadLetter, parked, now];
  return monthHolds(db, keptSql(table), params);
}

/** Whether the month holds a delivery past its horizon at `now`. */
function holdsExpired(db: Queryable, month: MonthRange, now: Date): Promise<boolean> {
  return monthHolds(db, EXPIRED_SQL, [fromParam(month), ...horizonParams(now), month.to]);
}

/**
 * Drops the due months that keep nothing, checked again on the month once detached: a delivery
 * made kept meanwhile (a parked one unparked or leased) puts the month back.
 */
async function dropDeliveryMonths(pool: Pool, months: readonly MonthRange[], now: Date) {
  let dropped = 0;
  for (const month of monthsToSweep(months, now)) {
    if (!(await holdsKept(pool, month, now))) {
      dropped += await dropPartition(pool, DELIVERIES, month.name, async (client, detached) => {
        return !(await holdsKept(client, month, now, detached));
      });
    }
  }
  return dropped;
}

async function sweepDeliveries(pool: Pool, now: Date, limit: number): Promise<number> {
  const dropped = await dropDeliveryMonths(pool, await listPartitions(pool, DELIVERIES), now);
  const before = overdueBefore(await listPartitions(pool, DELIVERIES), now);
  if (!before) {
    return dropped;
  }
  return (
    dropped +
    (await deleteInBatches(pool, DELETE_EXPIRED_SQL, [before, ...horizonParams(now)], limit))
  );
}

/** The oldest month still holding an expired row, past its deadline or (negative) not yet. */
async function deliveriesBehindMs(pool: Pool, now: Date): Promise<number | null> {
  for (const month of await listPartitions(pool, DELIVERIES)) {
    if (monthStage(month, now) === "young" || (await holdsExpired(pool, month, now))) {
      return pastDeadlineMs(month, now);
    }
  }
  return null;
}

async function oldestAgeMs(pool: Pool, sql: string, now: Date): Promise<number | null> {
  const { rows } = await pool.query<{ oldest: Date | null }>(sql);
  const oldest = rows[0]?.oldest;
  return oldest ? now.getTime() - oldest.getTime() : null;
}

/** Deliveries: the partitions kept ready and complete, whole months dropped, pinned ones thinned. */
export const deliveriesRetention: RetentionRule = {
  table: "dispatcher.deliveries",
  relation: DELIVERIES,
  keepMs: HOLD_MS,
  async prepare(pool, now) {
    await ensureDeliveryMonths(pool, now);
    await completePartitionIndexes(pool, DELIVERIES);
    await completePartitionIndexes(pool, ATTEMPTS);
  },
  sweep: sweepDeliveries,
  oldestRowAgeMs: (pool, now) =>
    oldestAgeMs(pool, "SELECT min(created_at) AS oldest FROM deliveries", now),
  behindMs: deliveriesBehindMs,
};

/**
 * Whether a delivery still stored has an attempt in the attempts month [$1, $2) of `table`
 * (attempts, or the month detached from it). Only the deliveries created before $2 can; the
 * caller asks once those are few (the months before it dropped or thinned to their kept rows).
 */
const pinnedSql = (table: string) => `
SELECT EXISTS (
  SELECT 1 FROM deliveries d
   WHERE d.created_at < $2
     AND EXISTS (SELECT 1 FROM ${table} a
                  WHERE a.delivery_id = d.id AND a.attempted_at >= $1 AND a.attempted_at < $2)
) AS found`;

/** One batch of attempts made before $1 whose delivery is gone. */
const DELETE_ORPHANS_SQL = `
WITH doomed AS (
  SELECT a.delivery_id, a.replay_no, a.attempt, a.attempted_at FROM attempts a
   WHERE a.attempted_at < $1 AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = a.delivery_id)
   LIMIT $2
)
DELETE FROM attempts a USING doomed x
 WHERE a.delivery_id = x.delivery_id AND a.replay_no = x.replay_no AND a.attempt = x.attempt
   AND a.attempted_at = x.attempted_at`;

/** Attempts whose delivery is gone, in the month [$1, $2). */
const ORPHANS_SQL = `
SELECT EXISTS (SELECT 1 FROM attempts a WHERE a.attempted_at >= $1 AND a.attempted_at < $2
                 AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = a.delivery_id)) AS found`;

/**
 * Whether every deliveries month that can have attempts in `month` (those starting before its
 * end) is past its hold and holds nothing expired: then the deliveries left there are the few
 * kept ones, and asking which have attempts in `month` is cheap.
 */
async function deliveriesSettledBefore(
  pool: Pool,
  deliveries: readonly MonthRange[],
  month: MonthRange,
  now: Date,
): Promise<boolean> {
  for (const earlier of deliveries) {
    if (!month.to || (earlier.from && earlier.from >= month.to)) {
      continue;
    }
    if (monthStage(earlier, now) === "young" || (await holdsExpired(pool, earlier, now))) {
      return false;
    }
  }
  return true;
}

function pinned(db: Queryable, month: MonthRange, table = ATTEMPTS): Promise<boolean> {
  return monthHolds(db, pinnedSql(table), [fromParam(month), month.to]);
}

async function sweepAttempts(pool: Pool, now: Date, limit: number): Promise<number> {
  const months = await listPartitions(pool, ATTEMPTS);
  const deliveries = await listPartitions(pool, DELIVERIES);
  let removed = 0;
  for (const month of monthsToSweep(months, now)) {
    if (
      (await deliveriesSettledBefore(pool, deliveries, month, now)) &&
      !(await pinned(pool, month))
    ) {
      removed += await dropPartition(pool, ATTEMPTS, month.name, async (client, detached) => {
        return !(await pinned(client, month, detached));
      });
    }
  }
  const before = overdueBefore(await listPartitions(pool, ATTEMPTS), now);
  return before
    ? removed + (await deleteInBatches(pool, DELETE_ORPHANS_SQL, [before], limit))
    : removed;
}

/** The oldest attempts month past its hold that still holds attempts of deleted deliveries. */
async function attemptsBehindMs(pool: Pool, now: Date): Promise<number | null> {
  for (const month of await listPartitions(pool, ATTEMPTS)) {
    if (
      monthStage(month, now) !== "overdue" ||
      (await monthHolds(pool, ORPHANS_SQL, [fromParam(month), month.to]))
    ) {
      return pastDeadlineMs(month, now);
    }
  }
  return null;
}

/** Attempts: a month goes once no delivery still stored has an attempt in it. */
export const attemptsRetention: RetentionRule = {
  table: "dispatcher.attempts",
  relation: ATTEMPTS,
  keepMs: HOLD_MS,
  sweep: sweepAttempts,
  oldestRowAgeMs: (pool, now) =>
    oldestAgeMs(pool, "SELECT min(attempted_at) AS oldest FROM attempts", now),
  behindMs: attemptsBehindMs,
};

/** The dispatcher's rules, deliveries first: attempts months follow theirs. */
export const dispatcherRetention: readonly RetentionRule[] = [
  deliveriesRetention,
  attemptsRetention,
];
