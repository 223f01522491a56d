import { TRIAL_DAYS } from "@th/billing";
import { MONTHLY_PRICE_CENTS } from "./prices.ts";
import { DAY_MS, type TenantRow } from "./tenants.ts";

/** A trial started at `activatedAt` ends `TRIAL_DAYS` later. */
export function trialEndsAt(activatedAt: Date): Date {
  return new Date(activatedAt.getTime() + TRIAL_DAYS * DAY_MS);
}

/**
 * The first month's charge when a trial ends. Its idempotency key names the tenant and the
 * trial's end, so a retried or repeated conversion never charges twice.
 */
export function firstMonthCharge(tenant: Pick<TenantRow, "id" | "tier" | "trial_ends_at">) {
  return {
    amountCents: MONTHLY_PRICE_CENTS[tenant.tier],
    periodStart: tenant.trial_ends_at,
    idempotencyKey: `${tenant.id}:${tenant.trial_ends_at.toISOString()}`,
  };
}

/** A paid first month makes the tenant active; a refused charge cancels it. */
export function statusAfterTrial(charged: boolean): "active" | "cancelled" {
  return charged ? "active" : "cancelled";
}
