export { addMonthsClamped, type BillingPeriod, billingPeriodAt } from "./period.ts";
export {
  cheapestTierWith,
  nextTierWithMoreLeadViews,
  type Surface,
  TIERS,
  type TierFacts,
  TRIAL_DAYS,
  tierOpens,
} from "./tiers.ts";
