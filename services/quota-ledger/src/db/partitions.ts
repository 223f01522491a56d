import type { Pool } from "@th/db";
import { ensureMonthlyPartitions } from "@th/service-kit";
import { utcDayOf } from "../domain/period.ts";
import { monthStart, monthsOf } from "../domain/retention.ts";

/** lead_views is partitioned by month of its day (migration 20261230000200, decision 0393). */
export const LEAD_VIEWS = "lead_views";

/** Months of partitions kept ready after the current one, so a month never starts without one. */
export const LEAD_VIEW_MONTHS_AHEAD = 2;

interface PartitionBounds {
  /** YYYY-MM-DD, or null for MINVALUE. */
  from: string | null;
  to: string;
}

/** The range of every partition of lead_views, from the catalog. */
async function partitionBounds(pool: Pool): Promise<PartitionBounds[]> {
  const { rows } = await pool.query<PartitionBounds>(
    `SELECT (regexp_match(bound, 'FROM \\(''([^'']+)''\\)'))[1] AS "from",
            (regexp_match(bound, 'TO \\(''([^'']+)''\\)'))[1] AS "to"
       FROM (SELECT pg_get_expr(c.relpartbound, c.oid) AS bound
               FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
              WHERE i.inhparent = $1::regclass) AS partitions`,
    [LEAD_VIEWS],
  );
  return rows;
}

/** The given months (their first days) that no partition covers. */
async function uncoveredMonths(pool: Pool, months: readonly Date[]): Promise<Date[]> {
  const bounds = await partitionBounds(pool);
  return months.filter((month) => {
    const day = utcDayOf(month);
    return !bounds.some(({ from, to }) => (from === null || from <= day) && day < to);
  });
}

/**
 * Creates the partitions of the months from `now`'s to LEAD_VIEW_MONTHS_AHEAD after it that no
 * partition covers yet; with nothing to create it takes no lock. Coverage is read from the
 * bounds, not the names: the first partition, made from the table as it was, spans months.
 */
export async function ensureLeadViewMonths(pool: Pool, now: Date): Promise<void> {
  const months = Array.from({ length: LEAD_VIEW_MONTHS_AHEAD + 1 }, (_, i) => monthStart(now, i));
  for (const month of await uncoveredMonths(pool, months)) {
    await ensureMonthlyPartitions(pool, LEAD_VIEWS, month, 0);
  }
}

/**
 * Creates the partition of each month of `days` that has none: what a batch of lead-views of a
 * month no partition covers needs before it can be recorded (a clock far ahead, a service that
 * was stopped past the months it had made).
 */
export async function ensureLeadViewMonthsOf(pool: Pool, days: readonly string[]): Promise<void> {
  for (const month of await uncoveredMonths(pool, monthsOf(days))) {
    await ensureMonthlyPartitions(pool, LEAD_VIEWS, month, 0);
  }
}

/** Postgres's answer to a row whose day no partition of lead_views takes. */
export function isMissingPartition(error: unknown): boolean {
  const { code, message } = error as { code?: string; message?: string };
  return code === "23514" && /no partition of relation/.test(message ?? "");
}

/** The first day the ledger keeps lead-views of (migration 20261230000300). */
export async function leadViewsKeptFrom(pool: Pool): Promise<string | null> {
  const { rows } = await pool.query<{ kept_from: string }>(
    "SELECT to_char(kept_from, 'YYYY-MM-DD') AS kept_from FROM lead_view_horizon WHERE kept_from > '-infinity'",
  );
  return rows[0]?.kept_from ?? null;
}

/** Moves the horizon forward to `day` (never back): events of earlier days are not recorded. */
export async function advanceLeadViewHorizon(pool: Pool, day: Date): Promise<void> {
  await pool.query("UPDATE lead_view_horizon SET kept_from = $1 WHERE kept_from < $1", [
    utcDayOf(day),
  ]);
}
