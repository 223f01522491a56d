import { type BillingPeriod, billingPeriodAt } from "@th/billing";

/** A UTC calendar day, `YYYY-MM-DD`. */
export function utcDayOf(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/**
 * The billing period a tenant is in at `at`. Quotas reset at 00:00 UTC on the anniversary day
 * (clamped to a shorter month's last day). A tenant without an anniversary has never been
 * activated; its usage is shown by calendar month so the figures still have a frame.
 */
export function currentPeriod(billingAnniversary: string | null, at: Date): BillingPeriod {
  const anchor =
    billingAnniversary === null
      ? new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1))
      : new Date(`${billingAnniversary}T00:00:00Z`);
  return billingPeriodAt(anchor, at);
}

/** True for a real calendar day written `YYYY-MM-DD` (not 2026-02-30). */
export function isUtcDay(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    return false;
  }
  const parsed = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(parsed.getTime()) && utcDayOf(parsed) === value;
}
