import {
  cheapestTierWith,
  nextTierWithMoreLeadViews,
  type Surface,
  TIERS,
  tierOpens,
} from "@th/billing";
import type { Tier } from "@th/contracts";
import { ApiError } from "@th/service-kit";

/** The 403 for a tier that does not open the route's surface; undefined when it does. */
export function tierRefusal(
  tier: Tier,
  surface: Surface,
  upgradeUrl: string,
): ApiError | undefined {
  if (tierOpens(tier, surface)) {
    return undefined;
  }
  return new ApiError(
    "tier_required",
    `the ${TIERS[tier].label} tier does not include ${surface === "management" ? "the management API" : surface}; upgrade to ${TIERS[cheapestTierWith(surface)].label} or above`,
    { upgrade_url: upgradeUrlFor(upgradeUrl, tier, surface) },
  );
}

function upgradeUrlFor(base: string, tier: string, surface: Surface): string {
  return pricingUrl(base, tier, cheapestTierWith(surface), surface);
}

/** Where a tenant out of lead-views can buy more: the next tier up with a larger monthly cap. */
export function quotaUpgradeUrlFor(base: string, tier: Tier): string {
  return pricingUrl(base, tier, nextTierWithMoreLeadViews(tier), "lead_views");
}

/** The pricing page, opened on a move from one tier to another for a feature. */
function pricingUrl(base: string, from: string, to: string, feature: string): string {
  const url = new URL(base);
  url.searchParams.set("from", from);
  url.searchParams.set("to", to);
  url.searchParams.set("feature", feature);
  return url.toString();
}
