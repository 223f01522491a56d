import { utcDayOf } from "@th/contracts";

/** The ledger's retention rules (decision 0393), as pure date arithmetic. */

const DAY_MS = 86_400_000;

/** 00:00 UTC of the first day of `date`'s month, `plusMonths` months on. */
export function monthStart(date: Date, plusMonths = 0): Date {
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + plusMonths, 1));
}

/**
 * The first day of the months the ledger keeps: the month of the instant `keepDays` ago. Every
 * month before it ended at least `keepDays` ago, so all its lead-views are past retention, while
 * the month of the horizon still holds some that are not. A lead-view is therefore kept at least
 * `keepDays` and removed with its month, less than a month later.
 */
export function leadViewHorizon(now: Date, keepDays: number): Date {
  return monthStart(new Date(now.getTime() - keepDays * DAY_MS));
}

/**
 * When a lead-view of `day` (YYYY-MM-DD) is past retention: once its whole month is `keepDays`
 * old. How far `now` is past that for the oldest row is how far behind retention is.
 */
export function leadViewExpiry(day: string, keepDays: number): Date {
  return new Date(monthStart(new Date(`${day}T00:00:00Z`), 1).getTime() + keepDays * DAY_MS);
}

/**
 * The first UTC day whose voids and runners-up are still kept. A read of day D can be voided
 * until D's last instant plus the window; from the next day on nothing of D can arrive, and its
 * rows go.
 */
export function voidWindowStart(now: Date, windowDays: number): string {
  return utcDayOf(new Date(now.getTime() - windowDays * DAY_MS));
}

/** When the voids and runners-up of `day` are past the window: the day after it closed. */
export function voidWindowExpiry(day: string, windowDays: number): Date {
  return new Date(new Date(`${day}T00:00:00Z`).getTime() + (windowDays + 1) * DAY_MS);
}

/** How long a day's voids and runners-up are kept, counted from the start of the day. */
export function voidWindowKeepMs(windowDays: number): number {
  return (windowDays + 1) * DAY_MS;
}

export function daysMs(days: number): number {
  return days * DAY_MS;
}

/** The months (their first days) spanned by the given UTC days, each once, in order. */
export function monthsOf(days: readonly string[]): Date[] {
  const months = new Set(days.map((day) => `${day.slice(0, 7)}-01`));
  return [...months].sort().map((month) => new Date(`${month}T00:00:00Z`));
}
