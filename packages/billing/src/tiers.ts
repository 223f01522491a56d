import type { QuotaLimits, Tier } from "@th/contracts";

export type Surface = "rest" | "webhooks" | "mcp" | "csv" | "management";

export interface TierFacts {
  tier: Tier;
  label: string;
  limits: QuotaLimits;
  surfaces: readonly Surface[];
}

/**
 * The tier table of the specification. Custom's figures are the floor of a negotiated contract
 * ("10,000+", "1,200+", "6 or more" seats); a Custom tenant's own limits may be higher.
 */
export const TIERS: Readonly<Record<Tier, TierFacts>> = {
  starter: {
    tier: "starter",
    label: "Starter",
    limits: { seats: 1, lead_views_per_month: 500, rate_per_minute: 300, concurrent_webhooks: 0 },
    surfaces: ["rest"],
  },
  operator: {
    tier: "operator",
    label: "Operator",
    limits: { seats: 1, lead_views_per_month: 2_000, rate_per_minute: 600, concurrent_webhooks: 5 },
    surfaces: ["rest", "webhooks", "mcp", "csv"],
  },
  team: {
    tier: "team",
    label: "Team",
    limits: {
      seats: 5,
      lead_views_per_month: 5_000,
      rate_per_minute: 600,
      concurrent_webhooks: 10,
    },
    surfaces: ["rest", "webhooks", "mcp", "csv", "management"],
  },
  custom: {
    tier: "custom",
    label: "Custom",
    limits: {
      seats: 6,
      lead_views_per_month: 10_000,
      rate_per_minute: 1_200,
      concurrent_webhooks: 20,
    },
    surfaces: ["rest", "webhooks", "mcp", "csv", "management"],
  },
};

export function tierOpens(tier: Tier, surface: Surface): boolean {
  return TIERS[tier].surfaces.includes(surface);
}

/** From the cheapest tier up. */
const TIER_ORDER: readonly Tier[] = ["starter", "operator", "team", "custom"];

/** The cheapest tier that opens a surface, named in 403 upgrade prompts. */
export function cheapestTierWith(surface: Surface): Tier {
  return TIER_ORDER.find((tier) => tierOpens(tier, surface)) ?? "custom";
}

/**
 * The next tier up with more lead-views a month, named in 402 upgrade prompts; for Custom, Custom
 * again (a larger contract).
 */
export function nextTierWithMoreLeadViews(tier: Tier): Tier {
  const cap = TIERS[tier].limits.lead_views_per_month;
  return TIER_ORDER.find((next) => TIERS[next].limits.lead_views_per_month > cap) ?? "custom";
}

export const TRIAL_DAYS = 14;
