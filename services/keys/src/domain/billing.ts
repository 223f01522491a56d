import { addMonthsClamped } from "@th/billing";
import type { PaymentStanding, TenantStatus } from "@th/contracts";
import { DAY_MS } from "./tenants.ts";

/**
 * A subscription as the card processor reports it, in this service's words: `past_due` covers
 * every state in which a payment is owed and not made (Stripe's past_due, unpaid, incomplete,
 * paused), `cancelled` every state that ended it.
 */
export type ProcessorStatus = "trialing" | "active" | "past_due" | "cancelled";

/** What a tenant's billing is: the subscription's lifecycle and whether its payments are in order. */
export interface BillingState {
  status: TenantStatus;
  standing: PaymentStanding;
  past_due_since: Date | null;
}

/** Stripe's subscription statuses in this service's words (unknown ones owe a payment). */
export function processorStatusOf(stripeStatus: string): ProcessorStatus {
  switch (stripeStatus) {
    case "trialing":
      return "trialing";
    case "active":
      return "active";
    case "canceled":
    case "incomplete_expired":
      return "cancelled";
    default:
      return "past_due";
  }
}

/**
 * The tenant's billing once the processor reports its subscription in `processor`. Cancelled is
 * final: nothing the processor says afterwards revives a tenant. A subscription in good order
 * restores the standing at once, suspension included; one that owes a payment starts the grace
 * period (at `now`) unless it runs already, and keeps a suspension. A trial that owes its first
 * payment has ended, so the tenant is active, not trialing.
 */
export function billingAfter(
  current: BillingState,
  processor: ProcessorStatus,
  now: Date,
): BillingState {
  if (current.status === "cancelled") {
    return current;
  }
  switch (processor) {
    case "cancelled":
      return { status: "cancelled", standing: current.standing, past_due_since: null };
    case "trialing":
    case "active":
      return { status: processor, standing: "good", past_due_since: null };
    case "past_due":
      return current.standing === "good"
        ? { status: "active", standing: "past_due", past_due_since: now }
        : { ...current, status: "active" };
  }
}

/** Whether two billing states differ in anything a consumer of `tenant.changed` would see. */
export function billingChanged(before: BillingState, after: BillingState): boolean {
  return (
    before.status !== after.status ||
    before.standing !== after.standing ||
    before.past_due_since?.getTime() !== after.past_due_since?.getTime()
  );
}

/** When a grace period that started at `pastDueSince` ends: reads stop at that instant. */
export function graceEndsAt(pastDueSince: Date, graceDays: number): Date {
  return new Date(pastDueSince.getTime() + graceDays * DAY_MS);
}

/** A past-due tenant whose grace ran out by `now` is suspended; any other state stays. */
export function suspendedAfterGrace(state: BillingState, now: Date, graceDays: number): boolean {
  return (
    state.status !== "cancelled" &&
    state.standing === "past_due" &&
    state.past_due_since !== null &&
    graceEndsAt(state.past_due_since, graceDays) <= now
  );
}

/**
 * The first billing anniversary after the trial: the activation's UTC day one month on (the
 * month's last day when it is shorter). The processor's billing cycle is anchored there, so the
 * charge at the trial's end covers the rest of the first quota month, and every later charge
 * falls on the day the monthly quota resets.
 */
export function firstPaidAnniversary(activatedAt: Date): Date {
  const day = new Date(
    Date.UTC(activatedAt.getUTCFullYear(), activatedAt.getUTCMonth(), activatedAt.getUTCDate()),
  );
  return addMonthsClamped(day, 1);
}

/**
 * The share of a month's price the charge at the trial's end covers: from the trial's end to
 * the first paid anniversary, over that month's length. The built-in processor charges this;
 * Stripe computes its own proration for the anchored cycle.
 */
export function firstChargeCents(
  monthlyCents: number,
  activatedAt: Date,
  trialEndsAt: Date,
): number {
  const anchor = firstPaidAnniversary(activatedAt);
  const monthStart = addMonthsClamped(anchor, -1);
  const covered = anchor.getTime() - trialEndsAt.getTime();
  const month = anchor.getTime() - monthStart.getTime();
  return Math.max(0, Math.round((monthlyCents * covered) / month));
}
