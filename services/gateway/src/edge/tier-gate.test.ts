import { describe, expect, it } from "vitest";
import { quotaUpgradeUrlFor, tierRefusal } from "./tier-gate.ts";

const PRICING = "https://example.test/pricing";

describe("the tier gate", () => {
  it("lets a tier through to a surface it opens", () => {
    expect(tierRefusal("starter", "rest", PRICING)).toBeUndefined();
    expect(tierRefusal("team", "management", PRICING)).toBeUndefined();
  });

  it("refuses a surface the tier does not open with 403, naming the cheapest tier that does and its pricing page", () => {
    const refusal = tierRefusal("starter", "management", PRICING);
    expect(refusal?.status).toBe(403);
    expect(refusal?.body()).toEqual({
      error: "tier_required",
      detail: "the Starter tier does not include the management API; upgrade to Team or above",
      upgrade_url: `${PRICING}?from=starter&to=team&feature=management`,
    });
    expect(tierRefusal("starter", "mcp", PRICING)?.message).toBe(
      "the Starter tier does not include mcp; upgrade to Operator or above",
    );
  });
});

describe("the lead-view upgrade link", () => {
  it("opens the pricing page on the next tier with a larger monthly cap", () => {
    expect(quotaUpgradeUrlFor(PRICING, "starter")).toBe(
      `${PRICING}?from=starter&to=operator&feature=lead_views`,
    );
  });
});
