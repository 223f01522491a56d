import { billingPeriodAt } from "@th/billing";

const DAY_MS = 86_400_000;
/** Past this many anniversaries the cache starts afresh, so it stays bounded. */
const MAX_ANNIVERSARIES = 4096;

export interface BillingPeriods {
  /** The billing period of a tenant with this anniversary (YYYY-MM-DD) at a time (ms). */
  at(anniversary: string, at: number): { start: Date; end: Date };
  /** The X-Quota-Resets text of a period end. */
  iso(date: Date): string;
}

/**
 * A tenant's billing period changes once a day at most (anniversaries fall at 00:00 UTC), so it
 * is computed once per anniversary and UTC day rather than once per request; so is the
 * X-Quota-Resets text of each period end.
 */
export function billingPeriods(): BillingPeriods {
  const byAnniversary = new Map<string, { day: number; start: Date; end: Date }>();
  const isoOf = new WeakMap<Date, string>();
  return {
    at(anniversary: string, at: number): { start: Date; end: Date } {
      const day = Math.floor(at / DAY_MS);
      const cached = byAnniversary.get(anniversary);
      if (cached?.day === day) {
        return cached;
      }
      const anchor = new Date(`${anniversary}T00:00:00Z`);
      if (Number.isNaN(anchor.getTime())) {
        return billingPeriodAt(new Date(at), new Date(at));
      }
      const period = billingPeriodAt(anchor, new Date(day * DAY_MS));
      if (byAnniversary.size >= MAX_ANNIVERSARIES) {
        byAnniversary.clear();
      }
      const entry = { day, start: period.start, end: period.end };
      byAnniversary.set(anniversary, entry);
      return entry;
    },
    iso(date: Date): string {
      let text = isoOf.get(date);
      if (text === undefined) {
        text = date.toISOString();
        isoOf.set(date, text);
      }
      return text;
    },
  };
}
