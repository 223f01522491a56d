import { describe, expect, it } from "vitest";
import {
  seatShortfall,
  seatsTaken,
  type TenantRow,
  tenantChangedEvent,
  tenantFromJson,
  tenantView,
} from "./tenants.ts";

const row: TenantRow = {
  id: "ten_1",
  company: "Acme Realty",
  tier: "team",
  status: "trialing",
  seats: 5,
  lead_views_per_month: 10_000,
  rate_per_minute: 1_200,
  concurrent_webhooks: 20,
  payment_customer_ref: "cus_1",
  card_brand: "visa",
  card_last4: "4242",
  activated_at: new Date("2026-03-09T15:04:05.000Z"),
  trial_ends_at: new Date("2026-03-23T15:04:05.000Z"),
  revision: 3,
  payment_provider: "stripe",
  payment_subscription_ref: "sub_1",
  card_fingerprint: "fp_1",
  standing: "past_due",
  past_due_since: new Date("2026-04-02T00:00:00.000Z"),
  next_charge_at: new Date("2026-04-09T00:00:00.000Z"),
};

describe("tenant views", () => {
  it("show the billing anniversary as the activation date and never the processor's references or the card's fingerprint", () => {
    const view = tenantView(row);
    expect(view.billing_anniversary).toBe("2026-03-09");
    expect(view.trial_ends_at).toBe("2026-03-23T15:04:05.000Z");
    expect(view.card).toEqual({ brand: "visa", last4: "4242" });
    expect(view.standing).toBe("past_due");
    expect(view.next_charge_at).toBe("2026-04-09T00:00:00.000Z");
    for (const reference of ["cus_1", "sub_1", "fp_1"]) {
      expect(JSON.stringify(view)).not.toContain(reference);
    }
  });

  it("show a placeholder card when the processor gave no brand or last four", () => {
    expect(tenantView({ ...row, card_brand: null, card_last4: null }).card).toEqual({
      brand: "card",
      last4: "????",
    });
  });

  it("carry revision, limits and the change time in the tenant.changed event", () => {
    const at = new Date("2026-04-01T00:00:00.000Z");
    expect(tenantChangedEvent(row, at)).toEqual({
      tenant_id: "ten_1",
      revision: 3,
      tier: "team",
      status: "trialing",
      limits: {
        seats: 5,
        lead_views_per_month: 10_000,
        rate_per_minute: 1_200,
        concurrent_webhooks: 20,
      },
      billing_anniversary: "2026-03-09",
      trial_ends_at: "2026-03-23T15:04:05.000Z",
      changed_at: "2026-04-01T00:00:00.000Z",
      standing: "past_due",
    });
  });

  it("read a row_to_json tenant back with real dates", () => {
    const json = {
      ...row,
      activated_at: row.activated_at.toISOString(),
      trial_ends_at: row.trial_ends_at.toISOString(),
      past_due_since: "2026-04-02T00:00:00.000Z",
      next_charge_at: "2026-04-09T00:00:00.000Z",
    };
    expect(tenantFromJson(json)).toEqual(row);
    expect(
      tenantFromJson({ ...json, past_due_since: null, next_charge_at: null }).past_due_since,
    ).toBeNull();
  });
});

describe("seats", () => {
  it("let a member join while a seat is free and refuse once all are taken", () => {
    expect(seatsTaken(4, row)).toBeNull();
    expect(seatsTaken(5, row)).toBe("all 5 seat(s) of the Team tier are taken");
  });

  it("refuse a tier with fewer seats than the tenant has members, saying how many to remove", () => {
    expect(seatShortfall(1, "starter")).toBeNull();
    expect(seatShortfall(3, "starter")).toBe(
      "the Starter tier has 1 seat(s) and this tenant has 3 members; remove 2 before changing tier",
    );
  });
});
