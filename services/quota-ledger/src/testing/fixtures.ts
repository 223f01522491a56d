import type { LeadViewRecorded, TenantChanged } from "@th/contracts";
import type { HttpApp } from "@th/service-kit";
import { signedInject } from "@th/service-kit/testing";
import { INTERNAL_RECEIVER } from "../config.ts";

/** A GET of the ledger's internal API, signed as the gateway signs it. */
export async function signedGet(http: HttpApp | undefined, url: string) {
  if (!http) {
    throw new Error("no http app");
  }
  return http.inject(signedInject(http, INTERNAL_RECEIVER.service, { method: "GET", url }));
}

let sequence = 0;

/** A tenant id no other test uses, so tests share one broker and database without meeting. */
export function freshTenant(label: string): string {
  sequence++;
  return `ten_${label}_${sequence}_${Math.random().toString(36).slice(2, 8)}`;
}

export function leadView(
  tenantId: string,
  folio: string,
  recordedAt: string,
  billingPeriodStart: string,
): LeadViewRecorded {
  return {
    tenant_id: tenantId,
    folio,
    day: recordedAt.slice(0, 10),
    billing_period_start: billingPeriodStart,
    surface: "rest",
    request_id: `req_${folio}_${recordedAt}`,
    key_id: "key_test",
    member_id: "mem_test",
    recorded_at: recordedAt,
  };
}

export function tenantChange(
  tenantId: string,
  revision: number,
  tier: TenantChanged["tier"],
  leadViewsPerMonth: number,
  billingAnniversary: string | null,
): TenantChanged {
  return {
    tenant_id: tenantId,
    revision,
    tier,
    status: "active",
    limits: {
      lead_views_per_month: leadViewsPerMonth,
      rate_per_minute: 300,
      concurrent_webhooks: 0,
      seats: 1,
    },
    billing_anniversary: billingAnniversary,
    trial_ends_at: null,
    changed_at: "2026-10-01T00:00:00.000Z",
  };
}
