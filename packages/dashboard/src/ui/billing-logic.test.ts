import { describe, expect, it } from "vitest";
import {
  type Billing,
  cancelSummary,
  formatCents,
  isUpgrade,
  resetDay,
  standingNotice,
  statusText,
  tierChangeSummary,
} from "./billing-logic.ts";

const tiers: Billing["tiers"] = [
  {
    tier: "starter",
    label: "Starter",
    monthly_price_cents: 4_900,
    limits: { seats: 1, lead_views_per_month: 500, rate_per_minute: 300, concurrent_webhooks: 0 },
  },
  {
    tier: "team",
    label: "Team",
    monthly_price_cents: 39_900,
    limits: {
      seats: 5,
      lead_views_per_month: 5_000,
      rate_per_minute: 600,
      concurrent_webhooks: 10,
    },
  },
];

function billingOf(
  overrides: Partial<Billing["tenant"]> = {},
  extra: Partial<Billing> = {},
): Billing {
  return {
    tenant: {
      id: "ten_1",
      company: "Acme",
      tier: "starter",
      status: "trialing",
      seats: 1,
      lead_views_per_month: 500,
      rate_per_minute: 300,
      concurrent_webhooks: 0,
      trial_ends_at: "2026-11-16T10:00:00.000Z",
      billing_anniversary: "2026-11-02",
      card: { brand: "visa", last4: "4242" },
      standing: "good",
      next_charge_at: "2026-11-16T10:00:00.000Z",
      ...overrides,
    },
    grace_ends_at: null,
    invoices: [],
    tiers,
    ...extra,
  };
}

const team = tiers[1] as Billing["tiers"][number];
const starter = tiers[0] as Billing["tiers"][number];

describe("the billing page's wording", () => {
  it("says during the trial that an upgrade applies at once and charges nothing until the trial's end, at the new price", () => {
    const lines = tierChangeSummary(billingOf(), team);
    expect(lines[0]).toBe(
      "Upgrade to Team: 5 seats, 5,000 lead-views a month, 600 requests a minute, 10 concurrent webhooks.",
    );
    expect(lines[1]).toContain("apply at once");
    expect(lines[2]).toBe(
      "You are in your trial: nothing is charged now. The first charge, on Nov 16, 2026, is at Team's $399.00 a month, for the rest of your first month.",
    );
  });

  it("says after the trial that an upgrade's difference and a downgrade's credit go to the next invoice, on its date", () => {
    const active = billingOf({ status: "active", next_charge_at: "2026-12-02T00:00:00.000Z" });
    expect(tierChangeSummary(active, team)[2]).toBe(
      "The difference for the rest of this month is added to your next invoice, on Dec 2, 2026; then $399.00 each month.",
    );
    const onTeam = billingOf({
      status: "active",
      tier: "team",
      next_charge_at: "2026-12-02T00:00:00.000Z",
    });
    const down = tierChangeSummary(onTeam, starter);
    expect(down[0]).toMatch(/^Downgrade to Starter: 1 seat, 500 lead-views a month/);
    expect(down[1]).toContain("answer 402");
    expect(down[2]).toContain("A credit for the rest of this month");
  });

  it("tells an upgrade from a downgrade by the monthly price", () => {
    expect(isUpgrade(billingOf(), "team")).toBe(true);
    expect(isUpgrade(billingOf({ tier: "team" }), "starter")).toBe(false);
  });

  it("says a cancelled trial is never charged, and a cancelled subscription is not refunded", () => {
    expect(cancelSummary(billingOf()).join(" ")).toContain("nothing ever will be");
    expect(cancelSummary(billingOf({ status: "active" })).join(" ")).toContain("not refunded");
  });

  it("names the payment problem and when reads stop, or nothing when payments are in order", () => {
    expect(standingNotice(billingOf())).toBeNull();
    expect(
      standingNotice(
        billingOf(
          { status: "active", standing: "past_due" },
          { grace_ends_at: "2026-12-07T10:00:00.000Z" },
        ),
      ),
    ).toContain("Reads go on until Dec 7, 2026");
    expect(standingNotice(billingOf({ status: "active", standing: "suspended" }))).toContain(
      "Reads are suspended",
    );
    expect(statusText(billingOf({ status: "active", standing: "suspended" }), new Date())).toBe(
      "Suspended: payment overdue",
    );
    expect(statusText(billingOf(), new Date("2026-11-03T10:00:00.000Z"))).toBe(
      "Trial, 13 days left",
    );
  });

  it("writes amounts in their currency and the quota's reset day", () => {
    expect(formatCents(39_900)).toBe("$399.00");
    expect(formatCents(1_234, "eur")).toBe("€12.34");
    expect(resetDay("2026-11-02")).toBe("the 2nd of each month (the shorter months' last day)");
    expect(resetDay("2026-01-31")).toContain("the 31st");
    expect(resetDay("2026-01-11")).toContain("the 11th");
  });
});
