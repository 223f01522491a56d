// Whether one parcel matches one recipe, and why. Every rule is checked (no short cut on the first
// failure) so a manual run or a support engineer sees the whole picture in `failed_filters`.
//
// Missing data: a filter that needs a parcel fact the roll does not have (a null est_equity, no
// sale on record, no situs city, a foreign or blank mailing state) FAILS, with reason
// `missing_data`. A lead is something a tenant pays for; matching on a guess would bill them for
// parcels their recipe never asked for. Leave the filter out to accept parcels whatever that fact is.
import {
  type LeadSignal,
  normalizeStateCode,
  type Recipe,
  type RecipeFilters,
  type RecipeRange,
} from "@th/api-schemas";
import type { ParcelIngested, Sale } from "@th/contracts";
import { type NormalizedRecipe, normalizeCity, normalizeRecipe } from "./recipe.ts";
import { type SignalContribution, scoreSignals } from "./score.ts";

export type FilterName = keyof RecipeFilters;
export type RuleName = FilterName | "required_signals" | "excluded_signals" | "min_score";

export interface FailedFilter {
  filter: RuleName;
  /** `missing_data`: the parcel lacks the fact; `not_met`: it has it and it does not qualify. */
  reason: "missing_data" | "not_met";
  /** What the recipe asks for, readable: `>= 100000 and <= 800000`, `one of 16, 23`. */
  expected: string;
  /** What the parcel has: the value, the offending signals, or null when missing. */
  actual: string | number | boolean | null | readonly string[];
}

export interface RecipeEvaluation {
  matched: boolean;
  score: number;
  signals_fired: LeadSignal[];
  contributions: SignalContribution[];
  failed_filters: FailedFilter[];
}

/**
 * A recipe prepared for evaluation: normalized once, lists turned into sets, and required signals
 * tracked by the scorer. Build it once per recipe version and reuse it for every parcel.
 */
export interface CompiledRecipe {
  readonly kind: "compiled_recipe";
  readonly recipe: NormalizedRecipe;
  readonly weights: Readonly<Partial<Record<LeadSignal, number>>>;
  readonly counties: ReadonlySet<number> | undefined;
  readonly cities: ReadonlySet<string> | undefined;
  readonly zipCodes: ReadonlySet<string> | undefined;
  readonly useClasses: ReadonlySet<string> | undefined;
  readonly dorUseCodes: ReadonlySet<string> | undefined;
  readonly includeStates: ReadonlySet<string> | undefined;
  readonly excludeStates: ReadonlySet<string> | undefined;
}

function setOf<T>(values: readonly T[] | undefined): ReadonlySet<T> | undefined {
  return values === undefined ? undefined : new Set(values);
}

export function compileRecipe(recipe: Recipe): CompiledRecipe {
  const normalized = normalizeRecipe(recipe);
  const weights: Partial<Record<LeadSignal, number>> = {};
  // Required signals the recipe does not weight are tracked with weight 0 so they are reported
  // in `signals_fired` and `contributions` without moving the score.
  for (const signal of normalized.required_signals) {
    weights[signal] = 0;
  }
  Object.assign(weights, normalized.signals);
  const { filters } = normalized;
  return {
    kind: "compiled_recipe",
    recipe: normalized,
    weights,
    counties: setOf(filters.counties),
    cities: setOf(filters.cities),
    zipCodes: setOf(filters.zip_codes),
    useClasses: setOf(filters.use_classes),
    dorUseCodes: setOf(filters.dor_use_codes),
    includeStates: setOf(filters.owner_mailing_states?.include),
    excludeStates: setOf(filters.owner_mailing_states?.exclude),
  };
}

function isCompiledRecipe(recipe: Recipe | CompiledRecipe): recipe is CompiledRecipe {
  return "kind" in recipe && recipe.kind === "compiled_recipe";
}

/** Whole months from the sale's month to the observation's UTC month, in years (e.g. 14.75). */
export function saleAgeYears(sale: Sale | null, observedAt: string): number | null {
  const observed = new Date(observedAt);
  if (sale === null || Number.isNaN(observed.getTime())) {
    return null;
  }
  const months =
    observed.getUTCFullYear() * 12 + observed.getUTCMonth() - (sale.year * 12 + (sale.month - 1));
  return months / 12;
}

function describeRange(range: RecipeRange): string {
  if (range.min !== undefined && range.max !== undefined) {
    return `>= ${range.min} and <= ${range.max}`;
  }
  return range.min !== undefined ? `>= ${range.min}` : `<= ${range.max}`;
}

function inRange(value: number, range: RecipeRange): boolean {
  return (
    (range.min === undefined || value >= range.min) &&
    (range.max === undefined || value <= range.max)
  );
}

function describeList(values: Iterable<string | number>): string {
  return `one of ${[...values].join(", ")}`;
}

/** Roll ZIPs may carry the +4 part; recipes name 5-digit ZIPs. */
function zip5(zip: string | null): string | null {
  const match = zip === null ? null : /^\s*(\d{5})/.exec(zip);
  return match?.[1] ?? null;
}

function checkFilters(compiled: CompiledRecipe, parcel: ParcelIngested): FailedFilter[] {
  const { filters } = compiled.recipe;
  const failed: FailedFilter[] = [];

  const checkMember = (
    filter: FilterName,
    allowed: ReadonlySet<string | number> | undefined,
    value: string | number | null,
  ): void => {
    if (allowed === undefined) {
      return;
    }
    if (value === null) {
      failed.push({
        filter,
        reason: "missing_data",
        expected: describeList(allowed),
        actual: null,
      });
    } else if (!allowed.has(value)) {
      failed.push({ filter, reason: "not_met", expected: describeList(allowed), actual: value });
    }
  };

  const checkRange = (
    filter: FilterName,
    range: RecipeRange | undefined,
    value: number | null,
  ): void => {
    if (range === undefined) {
      return;
    }
    if (value === null) {
      failed.push({ filter, reason: "missing_data", expected: describeRange(range), actual: null });
    } else if (!inRange(value, range)) {
      // Sale ages are months / 12; four decimals show them without binary noise (6.3333, not
      // 6.333333333333333). The comparison above used the exact value.
      const shown = Number.isInteger(value) ? value : Math.round(value * 10_000) / 10_000;
      failed.push({ filter, reason: "not_met", expected: describeRange(range), actual: shown });
    }
  };

  checkMember("counties", compiled.counties, parcel.county_no);
  checkMember(
    "cities",
    compiled.cities,
    parcel.situs.city === null || parcel.situs.city.trim() === ""
      ? null
      : normalizeCity(parcel.situs.city),
  );
  checkMember("zip_codes", compiled.zipCodes, zip5(parcel.situs.zip));
  checkMember("use_classes", compiled.useClasses, parcel.land_use.use_class);
  checkMember(
    "dor_use_codes",
    compiled.dorUseCodes,
    parcel.land_use.dor_uc === null || parcel.land_use.dor_uc.trim() === ""
      ? null
      : parcel.land_use.dor_uc.trim().padStart(3, "0"),
  );

  checkRange("just_value", filters.just_value, parcel.valuation.just_value);
  checkRange("est_equity", filters.est_equity, parcel.valuation.est_equity);
  checkRange("equity_ratio", filters.equity_ratio, parcel.valuation.equity_ratio);
  checkRange("year_built", filters.year_built, parcel.year_built);
  checkRange("living_area_sqft", filters.living_area_sqft, parcel.living_area_sqft);
  checkRange("land_sqft", filters.land_sqft, parcel.land_sqft);
  checkRange(
    "last_sale_age_years",
    filters.last_sale_age_years,
    saleAgeYears(parcel.last_sale, parcel.observed_at),
  );
  checkRange(
    "last_qualified_sale_age_years",
    filters.last_qualified_sale_age_years,
    saleAgeYears(parcel.last_qualified_sale, parcel.observed_at),
  );

  if (compiled.includeStates !== undefined || compiled.excludeStates !== undefined) {
    // `mailing_state` is already the USPS code; the raw roll value is the fallback, normalized the
    // same way, so "FLORIDA" and "FL" are one state whichever field carries it.
    const rawState = parcel.owner.mailing_state ?? parcel.owner.mailing_address.state;
    const state = rawState === null ? null : normalizeStateCode(rawState);
    const expected = [
      compiled.includeStates && describeList(compiled.includeStates),
      compiled.excludeStates && `none of ${[...compiled.excludeStates].join(", ")}`,
    ]
      .filter((part) => part !== undefined)
      .join(" and ");
    if (state === null) {
      failed.push({
        filter: "owner_mailing_states",
        reason: "missing_data",
        expected,
        actual: rawState,
      });
    } else if (
      (compiled.includeStates !== undefined && !compiled.includeStates.has(state)) ||
      compiled.excludeStates?.has(state)
    ) {
      failed.push({ filter: "owner_mailing_states", reason: "not_met", expected, actual: state });
    }
  }

  if (filters.homestead !== undefined && parcel.homestead !== filters.homestead) {
    failed.push({
      filter: "homestead",
      reason: "not_met",
      expected: String(filters.homestead),
      actual: parcel.homestead,
    });
  }
  return failed;
}

/**
 * Evaluates a recipe against a parcel. The parcel matches when every filter passes, every
 * required signal fired, no excluded signal fired, and the (rounded) score is at least
 * `min_score`. Pure and deterministic: the same recipe and parcel always give the same result.
 */
export function evaluateRecipe(
  recipe: Recipe | CompiledRecipe,
  parcel: ParcelIngested,
): RecipeEvaluation {
  const compiled = isCompiledRecipe(recipe) ? recipe : compileRecipe(recipe);
  const failed = checkFilters(compiled, parcel);
  const fired = new Set<string>(parcel.signals_fired);
  const { required_signals, excluded_signals, min_score } = compiled.recipe;

  const missingRequired = required_signals.filter((signal) => !fired.has(signal));
  if (missingRequired.length > 0) {
    failed.push({
      filter: "required_signals",
      reason: "not_met",
      expected: `all of ${required_signals.join(", ")}`,
      actual: missingRequired,
    });
  }
  const firedExcluded = excluded_signals.filter((signal) => fired.has(signal));
  if (firedExcluded.length > 0) {
    failed.push({
      filter: "excluded_signals",
      reason: "not_met",
      expected: `none of ${excluded_signals.join(", ")}`,
      actual: firedExcluded,
    });
  }

  const { score, contributions, signals_fired } = scoreSignals(compiled.weights, fired);
  if (score < min_score) {
    failed.push({
      filter: "min_score",
      reason: "not_met",
      expected: `>= ${min_score}`,
      actual: score,
    });
  }
  return {
    matched: failed.length === 0,
    score,
    signals_fired,
    contributions,
    failed_filters: failed,
  };
}
