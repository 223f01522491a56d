import { type BillingPeriod, billingPeriodAt } from "@th/billing";

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
