// How long the dispatcher keeps deliveries and their attempts, and what it does with each month's
// partition (decision 0392). Pure: the queries that apply it are in db/retention.ts.
import { HOLD_MS } from "./schedule.ts";

const DAY_MS = 86_400_000;

/** A dead letter stays a day past its 30-day hold, so a replay at the hold's end still finds it. */
const DEAD_LETTER_GRACE_MS = DAY_MS;

/**
 * A parked delivery is kept this long after it was created, then removed unsent: the 30-day hold,
 * plus two days so that one parked for quota at the start of a billing month (at most 31 days)
 * is still there for the reset it waits for, and a day to send it.
 */
export const PARKED_KEEP_MS = HOLD_MS + 2 * DAY_MS;

/**
 * A month's partition is looked at once its month ended this long ago: before then some of its
 * rows are within the 30-day hold every delivery gets. It is dropped when nothing in it is kept.
 */
export const MONTH_DUE_MS = HOLD_MS;

/**
 * A month still holding kept rows this long after it ended (a delivery replayed late in its hold,
 * or replayed again) is pinned by them: its expired rows are deleted in batches instead of
 * waiting, and the rest goes with the partition once they are gone. Two holds: a delivery of the
 * month's last day replayed at the end of its hold is then still held.
 */
export const MONTH_DEADLINE_MS = 2 * HOLD_MS + 2 * DAY_MS;

/** Months of partitions kept ready after the current one. */
export const MONTHS_AHEAD = 2;

/** A month's partition, as the catalog gives its bounds (null for MINVALUE and MAXVALUE). */
export interface MonthRange {
  name: string;
  from: Date | null;
  to: Date | null;
}

/**
 * young: rows in it may be within their horizons, nothing is done; due: dropped once nothing in it
 * is kept; overdue: also, while it holds kept rows, its expired rows are deleted in batches.
 */
export type MonthStage = "young" | "due" | "overdue";

export function monthStage(month: MonthRange, now: Date): MonthStage {
  if (month.to === null) {
    return "young";
  }
  const ended = now.getTime() - month.to.getTime();
  if (ended >= MONTH_DEADLINE_MS) {
    return "overdue";
  }
  return ended >= MONTH_DUE_MS ? "due" : "young";
}

/** The months retention looks at (due or overdue), oldest first: the older ones of `months`. */
export function monthsToSweep(months: readonly MonthRange[], now: Date): MonthRange[] {
  return months.filter((month) => monthStage(month, now) !== "young");
}

/** The end of the newest overdue month: expired rows created before it are deleted in batches. */
export function overdueBefore(months: readonly MonthRange[], now: Date): Date | null {
  let end: Date | null = null;
  for (const month of months) {
    if (monthStage(month, now) === "overdue" && month.to && (!end || month.to > end)) {
      end = month.to;
    }
  }
  return end;
}

/** The times that decide which rows are past their horizon at `now`. */
export interface Horizons {
  /** A completed delivery whose hold ended before this. */
  completeHeldUntil: Date;
  /** A dead letter whose hold ended before this (a day before now). */
  deadLetterHeldUntil: Date;
  /** A parked delivery created before this. */
  parkedCreatedBefore: Date;
}

export function horizonsAt(now: Date): Horizons {
  return {
    completeHeldUntil: now,
    deadLetterHeldUntil: new Date(now.getTime() - DEAD_LETTER_GRACE_MS),
    parkedCreatedBefore: new Date(now.getTime() - PARKED_KEEP_MS),
  };
}

/**
 * `now` minus the time a month should be gone by (its deadline): negative while it has time
 * left. The kit's behind-gauge reads it for the oldest month still holding expired rows.
 */
export function pastDeadlineMs(month: MonthRange, now: Date): number | null {
  return month.to === null ? null : now.getTime() - (month.to.getTime() + MONTH_DEADLINE_MS);
}

/** The lower bound of a month as a query parameter: '-infinity' for the first (MINVALUE). */
export function fromParam(month: MonthRange): Date | string {
  return month.from ?? "-infinity";
}
