import type { Tier } from "@th/contracts";

/** Monthly list prices in US cents, charged on each billing anniversary after the trial. */
export const MONTHLY_PRICE_CENTS: Readonly<Record<Tier, number>> = {
  starter: 4_900,
  operator: 14_900,
  team: 39_900,
  custom: 99_900,
};
