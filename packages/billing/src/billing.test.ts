import { describe, expect, it } from "vitest";
import { addMonthsClamped, billingPeriodAt } from "./period.ts";
import { cheapestTierWith, nextTierWithMoreLeadViews, TIERS, tierOpens } from "./tiers.ts";

const at = (iso: string) => new Date(iso);

describe("billing periods", () => {
  it("reset on the anniversary of activation, not on the first of the month", () => {
    const period = billingPeriodAt(at("2026-03-10T15:30:00Z"), at("2026-05-02T00:00:00Z"));
    expect(period.start.toISOString()).toBe("2026-04-10T15:30:00.000Z");
    expect(period.end.toISOString()).toBe("2026-05-10T15:30:00.000Z");
  });

  it("clamp a 31st anniversary to February's last day and return to the 31st after", () => {
    const anchor = at("2027-01-31T09:00:00Z");
    expect(addMonthsClamped(anchor, 1).toISOString()).toBe("2027-02-28T09:00:00.000Z");
    expect(addMonthsClamped(anchor, 2).toISOString()).toBe("2027-03-31T09:00:00.000Z");
    expect(addMonthsClamped(at("2028-01-31T09:00:00Z"), 1).toISOString()).toBe(
      "2028-02-29T09:00:00.000Z",
    );
    const february = billingPeriodAt(anchor, at("2027-03-01T00:00:00Z"));
    expect(february.start.toISOString()).toBe("2027-02-28T09:00:00.000Z");
    expect(february.end.toISOString()).toBe("2027-03-31T09:00:00.000Z");
  });

  it("switch periods exactly at the anniversary instant", () => {
    const anchor = at("2026-01-15T12:00:00Z");
    expect(billingPeriodAt(anchor, at("2026-02-15T11:59:59.999Z")).index).toBe(0);
    expect(billingPeriodAt(anchor, at("2026-02-15T12:00:00Z")).index).toBe(1);
    expect(billingPeriodAt(anchor, anchor).index).toBe(0);
  });

  it("stay contiguous across years", () => {
    const anchor = at("2026-08-31T00:00:00Z");
    let previousEnd = billingPeriodAt(anchor, anchor).end;
    for (let day = 0; day < 800; day += 7) {
      const period = billingPeriodAt(anchor, new Date(anchor.getTime() + day * 86_400_000));
      expect(period.start <= new Date(anchor.getTime() + day * 86_400_000)).toBe(true);
      if (period.start > previousEnd) {
        throw new Error(`gap before ${period.start.toISOString()}`);
      }
      previousEnd = period.end;
    }
  });
});

describe("tiers", () => {
  it("match the specification's per-tier caps", () => {
    expect(TIERS.starter.limits).toEqual({
      seats: 1,
      lead_views_per_month: 500,
      rate_per_minute: 300,
      concurrent_webhooks: 0,
    });
    expect(TIERS.operator.limits).toMatchObject({
      seats: 1,
      lead_views_per_month: 2_000,
      rate_per_minute: 600,
      concurrent_webhooks: 5,
    });
    expect(TIERS.team.limits).toMatchObject({
      seats: 5,
      lead_views_per_month: 5_000,
      rate_per_minute: 600,
      concurrent_webhooks: 10,
    });
    expect(TIERS.custom.limits.seats).toBeGreaterThanOrEqual(6);
    expect(TIERS.custom.limits.lead_views_per_month).toBeGreaterThanOrEqual(10_000);
    expect(TIERS.custom.limits.rate_per_minute).toBeGreaterThanOrEqual(1_200);
  });

  it("open REST only on Starter, webhooks from Operator, management from Team", () => {
    expect(TIERS.starter.surfaces).toEqual(["rest"]);
    expect(tierOpens("operator", "webhooks")).toBe(true);
    expect(tierOpens("operator", "management")).toBe(false);
    expect(tierOpens("team", "management")).toBe(true);
    expect(cheapestTierWith("webhooks")).toBe("operator");
    expect(cheapestTierWith("management")).toBe("team");
  });

  it("names the next tier up with more lead-views in a quota upgrade prompt", () => {
    expect(nextTierWithMoreLeadViews("starter")).toBe("operator");
    expect(nextTierWithMoreLeadViews("operator")).toBe("team");
    expect(nextTierWithMoreLeadViews("team")).toBe("custom");
    expect(nextTierWithMoreLeadViews("custom")).toBe("custom");
  });
});
