import { TIERS } from "@th/billing";
import type { PaymentStanding, TenantChanged, TenantStatus, Tier } from "@th/contracts";

export const DAY_MS = 86_400_000;

/** A tenant as stored: its tier, status, limits and payment reference. */
export interface TenantRow {
  id: string;
  company: string;
  tier: Tier;
  status: TenantStatus;
  seats: number;
  lead_views_per_month: number;
  rate_per_minute: number;
  concurrent_webhooks: number;
  payment_customer_ref: string;
  card_brand: string | null;
  card_last4: string | null;
  activated_at: Date;
  trial_ends_at: Date;
  revision: number;
  /** `local` or `stripe`: the processor that holds the tenant's customer and subscription. */
  payment_provider: string;
  payment_subscription_ref: string | null;
  card_fingerprint: string | null;
  standing: PaymentStanding;
  /** When the payment that is owed first failed; the grace period runs from here. */
  past_due_since: Date | null;
  /** When the processor charges next, as it last said. */
  next_charge_at: Date | null;
}

/** A tenant row read through `row_to_json`: its timestamps arrive as text. */
export type TenantJson = Omit<
  TenantRow,
  "activated_at" | "trial_ends_at" | "past_due_since" | "next_charge_at"
> & {
  activated_at: string;
  trial_ends_at: string;
  past_due_since: string | null;
  next_charge_at: string | null;
};

export function tenantFromJson(tenant: TenantJson): TenantRow {
  return {
    ...tenant,
    activated_at: new Date(tenant.activated_at),
    trial_ends_at: new Date(tenant.trial_ends_at),
    past_due_since: tenant.past_due_since === null ? null : new Date(tenant.past_due_since),
    next_charge_at: tenant.next_charge_at === null ? null : new Date(tenant.next_charge_at),
  };
}

/** The day of the month the tenant is billed on, as an ISO date. */
function billingAnniversary(row: TenantRow): string {
  return row.activated_at.toISOString().slice(0, 10);
}

/** The tenant as its own admins see it. */
export function tenantView(row: TenantRow) {
  return {
    id: row.id,
    company: row.company,
    tier: row.tier,
    status: row.status,
    seats: row.seats,
    lead_views_per_month: row.lead_views_per_month,
    rate_per_minute: row.rate_per_minute,
    concurrent_webhooks: row.concurrent_webhooks,
    trial_ends_at: row.trial_ends_at.toISOString(),
    billing_anniversary: billingAnniversary(row),
    card: { brand: row.card_brand ?? "card", last4: row.card_last4 ?? "????" },
    standing: row.standing,
    next_charge_at: row.next_charge_at?.toISOString() ?? null,
  };
}

/** The snapshot other services keep of a tenant, stamped with when it changed. */
export function tenantChangedEvent(row: TenantRow, now: Date): TenantChanged {
  return {
    tenant_id: row.id,
    revision: row.revision,
    tier: row.tier,
    status: row.status,
    limits: {
      seats: row.seats,
      lead_views_per_month: row.lead_views_per_month,
      rate_per_minute: row.rate_per_minute,
      concurrent_webhooks: row.concurrent_webhooks,
    },
    billing_anniversary: billingAnniversary(row),
    trial_ends_at: row.trial_ends_at.toISOString(),
    changed_at: now.toISOString(),
    standing: row.standing,
  };
}

/** Why a tenant with `members` active members cannot move to `tier`, or null when it can. */
export function seatShortfall(members: number, tier: Tier): string | null {
  const seats = TIERS[tier].limits.seats;
  if (members <= seats) {
    return null;
  }
  return `the ${TIERS[tier].label} tier has ${seats} seat(s) and this tenant has ${members} members; remove ${members - seats} before changing tier`;
}

/** Why one more member cannot join the tenant, or null while a seat is free. */
export function seatsTaken(
  members: number,
  tenant: Pick<TenantRow, "seats" | "tier">,
): string | null {
  return members >= tenant.seats
    ? `all ${tenant.seats} seat(s) of the ${TIERS[tenant.tier].label} tier are taken`
    : null;
}
