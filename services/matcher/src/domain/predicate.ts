// The hot path of matching: a parcel's facts are derived once (`parcelFacts`), and each recipe
// version is compiled once into a predicate over them (`compilePredicate`). The predicate applies
// the same rules as `evaluateRecipe` and stops at the first failure, without building
// explanations. It is a pre-test: a parcel it accepts is then judged by `evaluateRecipe`, the one
// definition of a match and its score, so the two can never disagree on what is published. A
// property test (predicate.test.ts) checks that the predicate never refuses a parcel
// `evaluateRecipe` accepts, and accepts exactly the parcels it accepts.
import {
  LEAD_SIGNALS,
  type LeadSignal,
  normalizeStateCode,
  type RecipeRange,
} from "@th/api-schemas";
import type { ParcelIngested } from "@th/contracts";
import { type CompiledRecipe, saleAgeYears } from "./evaluate.ts";
import { normalizeCity } from "./recipe.ts";
import { roundScore } from "./score.ts";

const SIGNAL_BIT: ReadonlyMap<string, number> = new Map(
  LEAD_SIGNALS.map((signal, index) => [signal, 1 << index]),
);

/** The bit of a catalogue signal; 0 for a name outside the catalogue (it can never count). */
export function signalBit(signal: string): number {
  return SIGNAL_BIT.get(signal) ?? 0;
}

/** The facts of one parcel every recipe is tested on, each derived the way `evaluateRecipe` does. */
export interface ParcelFacts {
  readonly parcel: ParcelIngested;
  readonly observedMs: number;
  readonly county: number;
  readonly city: string | null;
  readonly zip5: string | null;
  readonly useClass: string | null;
  readonly dorUseCode: string | null;
  readonly justValue: number;
  readonly estEquity: number | null;
  readonly equityRatio: number | null;
  readonly yearBuilt: number | null;
  readonly livingAreaSqft: number | null;
  readonly landSqft: number | null;
  readonly saleAge: number | null;
  readonly qualifiedSaleAge: number | null;
  readonly mailingState: string | null;
  readonly homestead: boolean;
  readonly signalBits: number;
  readonly signals: readonly string[];
}

/** Thrown for a parcel that cannot be judged at all; the consumer parks it with this reason. */
export class UnjudgeableParcelError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "UnjudgeableParcelError";
  }
}

const ZIP5 = /^\s*(\d{5})/;

export function parcelFacts(parcel: ParcelIngested): ParcelFacts {
  const observedMs = Date.parse(parcel.observed_at);
  if (Number.isNaN(observedMs)) {
    throw new UnjudgeableParcelError(
      `observed_at ${JSON.stringify(parcel.observed_at)} is not an RFC 3339 instant, so no recipe version can be chosen`,
    );
  }
  if (parcel.folio.trim() === "" || parcel.content_hash.trim() === "") {
    throw new UnjudgeableParcelError("folio and content_hash must not be empty");
  }
  if (!Number.isFinite(parcel.valuation.just_value)) {
    throw new UnjudgeableParcelError("valuation.just_value is not a number");
  }
  const city = parcel.situs.city;
  const dor = parcel.land_use.dor_uc;
  const rawState = parcel.owner.mailing_state ?? parcel.owner.mailing_address.state;
  let signalBits = 0;
  for (const signal of parcel.signals_fired) {
    signalBits |= signalBit(signal);
  }
  return {
    parcel,
    observedMs,
    county: parcel.county_no,
    city: city === null || city.trim() === "" ? null : normalizeCity(city),
    zip5: parcel.situs.zip === null ? null : (ZIP5.exec(parcel.situs.zip)?.[1] ?? null),
    useClass: parcel.land_use.use_class,
    dorUseCode: dor === null || dor.trim() === "" ? null : dor.trim().padStart(3, "0"),
    justValue: parcel.valuation.just_value,
    estEquity: parcel.valuation.est_equity,
    equityRatio: parcel.valuation.equity_ratio,
    yearBuilt: parcel.year_built,
    livingAreaSqft: parcel.living_area_sqft,
    landSqft: parcel.land_sqft,
    saleAge: saleAgeYears(parcel.last_sale, parcel.observed_at),
    qualifiedSaleAge: saleAgeYears(parcel.last_qualified_sale, parcel.observed_at),
    mailingState: rawState === null ? null : normalizeStateCode(rawState),
    homestead: parcel.homestead,
    signalBits,
    signals: parcel.signals_fired,
  };
}

export type Predicate = (facts: ParcelFacts) => boolean;

function rangeCheck(range: RecipeRange, read: (facts: ParcelFacts) => number | null): Predicate {
  const min = range.min ?? Number.NEGATIVE_INFINITY;
  const max = range.max ?? Number.POSITIVE_INFINITY;
  return (facts) => {
    const value = read(facts);
    return value !== null && value >= min && value <= max;
  };
}

function memberCheck<T>(
  allowed: ReadonlySet<T> | undefined,
  read: (facts: ParcelFacts) => T | null,
): Predicate | undefined {
  if (allowed === undefined) {
    return undefined;
  }
  return (facts) => {
    const value = read(facts);
    return value !== null && allowed.has(value);
  };
}

/**
 * Compiles a recipe version into one predicate: true exactly when `evaluateRecipe` would say
 * `matched`. Checks run cheapest and most selective first; the score is computed last with the
 * same summation order and rounding as `scoreSignals`.
 */
export function compilePredicate(compiled: CompiledRecipe): Predicate {
  const { filters, required_signals, excluded_signals, min_score } = compiled.recipe;
  const checks: Predicate[] = [];
  const add = (check: Predicate | undefined) => {
    if (check) {
      checks.push(check);
    }
  };
  let required = 0;
  for (const signal of required_signals) {
    required |= signalBit(signal);
  }
  let excluded = 0;
  for (const signal of excluded_signals) {
    excluded |= signalBit(signal);
  }
  if (required !== 0) {
    add((facts) => (facts.signalBits & required) === required);
  }
  if (excluded !== 0) {
    add((facts) => (facts.signalBits & excluded) === 0);
  }
  add(memberCheck(compiled.counties, (facts) => facts.county));
  add(memberCheck(compiled.useClasses as ReadonlySet<string> | undefined, (f) => f.useClass));
  add(memberCheck(compiled.zipCodes, (facts) => facts.zip5));
  add(memberCheck(compiled.cities, (facts) => facts.city));
  add(memberCheck(compiled.dorUseCodes, (facts) => facts.dorUseCode));
  if (filters.homestead !== undefined) {
    const wanted = filters.homestead;
    add((facts) => facts.homestead === wanted);
  }
  if (filters.just_value) {
    add(rangeCheck(filters.just_value, (f) => f.justValue));
  }
  if (filters.est_equity) {
    add(rangeCheck(filters.est_equity, (f) => f.estEquity));
  }
  if (filters.equity_ratio) {
    add(rangeCheck(filters.equity_ratio, (f) => f.equityRatio));
  }
  if (filters.year_built) {
    add(rangeCheck(filters.year_built, (f) => f.yearBuilt));
  }
  if (filters.living_area_sqft) {
    add(rangeCheck(filters.living_area_sqft, (f) => f.livingAreaSqft));
  }
  if (filters.land_sqft) {
    add(rangeCheck(filters.land_sqft, (f) => f.landSqft));
  }
  if (filters.last_sale_age_years) {
    add(rangeCheck(filters.last_sale_age_years, (f) => f.saleAge));
  }
  if (filters.last_qualified_sale_age_years) {
    add(rangeCheck(filters.last_qualified_sale_age_years, (f) => f.qualifiedSaleAge));
  }
  const include = compiled.includeStates;
  const exclude = compiled.excludeStates;
  if (include !== undefined || exclude !== undefined) {
    add((facts) => {
      const state = facts.mailingState;
      return (
        state !== null && (include === undefined || include.has(state)) && !exclude?.has(state)
      );
    });
  }

  // The score, as scoreSignals computes it: weights summed in signal-name order.
  const weighted = (Object.keys(compiled.weights) as LeadSignal[])
    .filter((signal) => compiled.weights[signal] !== undefined)
    .sort()
    .map((signal) => ({ bit: signalBit(signal), weight: compiled.weights[signal] ?? 0 }));
  let positiveTotal = 0;
  for (const { weight } of weighted) {
    if (weight > 0) {
      positiveTotal += weight;
    }
  }
  if (min_score > 0 && positiveTotal > 0) {
    add((facts) => {
      let fired = 0;
      for (const { bit, weight } of weighted) {
        if ((facts.signalBits & bit) !== 0) {
          fired += weight;
        }
      }
      return roundScore(Math.min(1, Math.max(0, fired / positiveTotal))) >= min_score;
    });
  }

  const count = checks.length;
  if (count === 0) {
    return () => true;
  }
  return (facts) => {
    for (let index = 0; index < count; index++) {
      if (!(checks[index] as Predicate)(facts)) {
        return false;
      }
    }
    return true;
  };
}
