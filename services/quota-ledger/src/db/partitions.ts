import { utcDayOf } from "@th/contracts";
import type { Pool } from "@th/db";
import { ensureMonthlyPartitions, listPartitions } from "@th/service-kit";
import { monthStart, monthsOf } from "../domain/retention.ts";

/** lead_views is partitioned by month of its day (migration 20261230000200, decision 0393). */
export const LEAD_VIEWS = "lead_views";

/** Months of partitions kept ready after the current one, so a month never starts without one. */
const LEAD_VIEW_MONTHS_AHEAD = 2;

/** The given months (their first days) that no partition covers. */
async function uncoveredMonths(pool: Pool, months: readonly Date[]): Promise<Date[]> {
  const partitions = await listPartitions(pool, LEAD_VIEWS);
  return months.filter(
    (month) =>
      !partitions.some(
        ({ from, to }) => (from === null || from <= month) && (to === null || month < to),
      ),
  );
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

/** Moves the horizon forward to `day` (never back): events of earlier days are not recorded. */
export async function advanceLeadViewHorizon(pool: Pool, day: Date): Promise<void> {
  await pool.query("UPDATE lead_view_horizon SET kept_from = $1 WHERE kept_from < $1", [
    utcDayOf(day),
  ]);
}
