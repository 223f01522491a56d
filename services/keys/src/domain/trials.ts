import { TRIAL_DAYS } from "@th/billing";
import { firstChargeCents } from "./billing.ts";
import { MONTHLY_PRICE_CENTS } from "./prices.ts";
import { DAY_MS, type TenantRow } from "./tenants.ts";

/** A trial started at `activatedAt` ends `TRIAL_DAYS` later. */
export function trialEndsAt(activatedAt: Date): Date {
  return new Date(activatedAt.getTime() + TRIAL_DAYS * DAY_MS);
}

/**
 * The built-in processor's charge when a trial ends: the rest of the first quota month, up to
 * the first paid anniversary (the share Stripe's anchored cycle charges too). Its idempotency
 * key names the tenant and the trial's end, so a retried or repeated conversion never charges
 * twice.
 */
export function firstMonthCharge(
  tenant: Pick<TenantRow, "id" | "tier" | "activated_at" | "trial_ends_at">,
) {
  return {
    amountCents: firstChargeCents(
      MONTHLY_PRICE_CENTS[tenant.tier],
      tenant.activated_at,
      tenant.trial_ends_at,
    ),
    periodStart: tenant.trial_ends_at,
    idempotencyKey: `${tenant.id}:${tenant.trial_ends_at.toISOString()}`,
  };
}
