// The hot path of matching: a parcel's facts are derived once (`parcelFacts`), and each recipe
// version is compiled once into a predicate over them (`compilePredicate`). The predicate applies
// the same rules as `evaluateRecipe`, stops at the first failure and builds no explanation.
// predicate.test.ts proves on random recipes and parcels (sparse ones included) that it accepts
// exactly the parcels `evaluateRecipe` matches. The score of a match still comes from
// `scoreSignals`, the one definition of the score; `evaluateRecipe` explains a result for manual
// runs and support.
import {
  LEAD_SIGNALS,
  type LeadSignal,
  normalizeStateCode,
  type RecipeRange,
} from "@th/api-schemas";
import { type ParcelIngested, type Sale, USE_CLASSES } from "@th/contracts";
import type { CompiledRecipe } from "./evaluate.ts";
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

/** `saleAgeYears` of evaluate.ts with the observation's month computed once per parcel. */
function saleAge(sale: Sale | null, observedMonth: number): number | null {
  return sale === null ? null : (observedMonth - (sale.year * 12 + (sale.month - 1))) / 12;
}

/**
 * Memoizes a string normalization: rolls repeat a few thousand cities and a few dozen state
 * spellings millions of times. Bounded; cleared when full.
 */
function memo<T>(compute: (value: string) => T, limit = 50_000): (value: string) => T {
  const cache = new Map<string, T>();
  return (value) => {
    let result = cache.get(value);
    if (result === undefined && !cache.has(value)) {
      result = compute(value);
      if (cache.size >= limit) {
        cache.clear();
      }
      cache.set(value, result);
    }
    return result as T;
  };
}

const cityKey = memo((city: string) => (city.trim() === "" ? null : normalizeCity(city)));
const stateCode = memo(normalizeStateCode);
const zip5Of = memo((zip: string) => ZIP5.exec(zip)?.[1] ?? null);
const dorCode = memo((dor: string) => (dor.trim() === "" ? null : dor.trim().padStart(3, "0")));

// An ingest stamps every parcel with one observed_at: parse it once.
let lastObservedAt = "";
let lastObservedMs = Number.NaN;
let lastObservedMonth = 0;

export function parcelFacts(parcel: ParcelIngested): ParcelFacts {
  if (parcel.observed_at !== lastObservedAt) {
    const ms = Date.parse(parcel.observed_at);
    if (Number.isNaN(ms)) {
      throw new UnjudgeableParcelError(
        `observed_at ${JSON.stringify(parcel.observed_at)} is not an RFC 3339 instant, so no recipe version can be chosen`,
      );
    }
    const observed = new Date(ms);
    lastObservedAt = parcel.observed_at;
    lastObservedMs = ms;
    lastObservedMonth = observed.getUTCFullYear() * 12 + observed.getUTCMonth();
  }
  const observedMs = lastObservedMs;
  const observedMonth = lastObservedMonth;
  if (parcel.folio.length === 0 || parcel.content_hash.length === 0) {
    throw new UnjudgeableParcelError("folio and content_hash must not be empty");
  }
  if (!Number.isFinite(parcel.valuation.just_value)) {
    throw new UnjudgeableParcelError("valuation.just_value is not a number");
  }
  const city = parcel.situs.city;
  const zip = parcel.situs.zip;
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
    city: city === null ? null : cityKey(city),
    zip5: zip === null ? null : zip5Of(zip),
    useClass: parcel.land_use.use_class,
    dorUseCode: dor === null ? null : dorCode(dor),
    justValue: parcel.valuation.just_value,
    estEquity: parcel.valuation.est_equity,
    equityRatio: parcel.valuation.equity_ratio,
    yearBuilt: parcel.year_built,
    livingAreaSqft: parcel.living_area_sqft,
    landSqft: parcel.land_sqft,
    saleAge: saleAge(parcel.last_sale, observedMonth),
    qualifiedSaleAge: saleAge(parcel.last_qualified_sale, observedMonth),
    mailingState: rawState === null ? null : stateCode(rawState),
    homestead: parcel.homestead,
    signalBits,
    signals: parcel.signals_fired,
  };
}

export type Predicate = (facts: ParcelFacts) => boolean;

const USE_CLASS_BIT: ReadonlyMap<string, number> = new Map(
  USE_CLASSES.map((useClass, index) => [useClass, 1 << index]),
);

/** A range as two bounds; an absent filter accepts anything, a present one needs the fact. */
class Bounds {
  readonly active: boolean;
  readonly min: number;
  readonly max: number;
  constructor(range: RecipeRange | undefined) {
    this.active = range !== undefined;
    this.min = range?.min ?? Number.NEGATIVE_INFINITY;
    this.max = range?.max ?? Number.POSITIVE_INFINITY;
  }
  test(value: number | null): boolean {
    return !this.active || (value !== null && value >= this.min && value <= this.max);
  }
}

const NO_SET: ReadonlySet<never> | undefined = undefined;

/**
 * One recipe version as flat fields, tested by one method. Every recipe has the same shape, so
 * the engine sees one monomorphic test over numbers, bit masks and the odd set, rather than a
 * chain of closures that differs per recipe.
 */
class RecipePredicate {
  readonly requiredBits: number;
  readonly excludedBits: number;
  /** 0: any use class; otherwise the bits of the allowed ones. */
  readonly useClassMask: number;
  /** -1: any; 0: not homesteaded; 1: homesteaded. */
  readonly homestead: number;
  readonly justValue: Bounds;
  readonly estEquity: Bounds;
  readonly equityRatio: Bounds;
  readonly yearBuilt: Bounds;
  readonly livingArea: Bounds;
  readonly land: Bounds;
  readonly saleAge: Bounds;
  readonly qualifiedSaleAge: Bounds;
  readonly counties: ReadonlySet<number> | undefined;
  readonly zipCodes: ReadonlySet<string> | undefined;
  readonly cities: ReadonlySet<string> | undefined;
  readonly dorUseCodes: ReadonlySet<string> | undefined;
  readonly statesActive: boolean;
  readonly includeStates: ReadonlySet<string> | undefined;
  readonly excludeStates: ReadonlySet<string> | undefined;
  readonly minScore: number;
  readonly positiveTotal: number;
  readonly scoreBits: readonly number[];
  readonly scoreWeights: readonly number[];

  constructor(compiled: CompiledRecipe) {
    const { filters, required_signals, excluded_signals, min_score } = compiled.recipe;
    let required = 0;
    for (const signal of required_signals) {
      required |= signalBit(signal);
    }
    let excluded = 0;
    for (const signal of excluded_signals) {
      excluded |= signalBit(signal);
    }
    this.requiredBits = required;
    this.excludedBits = excluded;
    let mask = 0;
    for (const useClass of filters.use_classes ?? []) {
      mask |= USE_CLASS_BIT.get(useClass) ?? 0;
    }
    this.useClassMask = mask;
    this.homestead = filters.homestead === undefined ? -1 : filters.homestead ? 1 : 0;
    this.justValue = new Bounds(filters.just_value);
    this.estEquity = new Bounds(filters.est_equity);
    this.equityRatio = new Bounds(filters.equity_ratio);
    this.yearBuilt = new Bounds(filters.year_built);
    this.livingArea = new Bounds(filters.living_area_sqft);
    this.land = new Bounds(filters.land_sqft);
    this.saleAge = new Bounds(filters.last_sale_age_years);
    this.qualifiedSaleAge = new Bounds(filters.last_qualified_sale_age_years);
    this.counties = compiled.counties ?? NO_SET;
    this.zipCodes = compiled.zipCodes ?? NO_SET;
    this.cities = compiled.cities ?? NO_SET;
    this.dorUseCodes = compiled.dorUseCodes ?? NO_SET;
    this.includeStates = compiled.includeStates ?? NO_SET;
    this.excludeStates = compiled.excludeStates ?? NO_SET;
    this.statesActive = this.includeStates !== undefined || this.excludeStates !== undefined;
    // The score, as scoreSignals computes it: weights summed in signal-name order.
    const weighted = (Object.keys(compiled.weights) as LeadSignal[])
      .filter((signal) => compiled.weights[signal] !== undefined)
      .sort();
    this.scoreBits = weighted.map((signal) => signalBit(signal));
    this.scoreWeights = weighted.map((signal) => compiled.weights[signal] ?? 0);
    let positiveTotal = 0;
    for (const weight of this.scoreWeights) {
      if (weight > 0) {
        positiveTotal += weight;
      }
    }
    this.positiveTotal = positiveTotal;
    // Without positive weights the score is 1, which meets any min_score.
    this.minScore = positiveTotal > 0 ? min_score : 0;
  }

  test(facts: ParcelFacts): boolean {
    const bits = facts.signalBits;
    if ((bits & this.requiredBits) !== this.requiredBits || (bits & this.excludedBits) !== 0) {
      return false;
    }
    if (this.useClassMask !== 0) {
      const bit = facts.useClass === null ? 0 : (USE_CLASS_BIT.get(facts.useClass) ?? 0);
      if ((bit & this.useClassMask) === 0) {
        return false;
      }
    }
    if (this.homestead !== -1 && facts.homestead !== (this.homestead === 1)) {
      return false;
    }
    if (
      !this.justValue.test(facts.justValue) ||
      !this.estEquity.test(facts.estEquity) ||
      !this.equityRatio.test(facts.equityRatio) ||
      !this.yearBuilt.test(facts.yearBuilt) ||
      !this.livingArea.test(facts.livingAreaSqft) ||
      !this.land.test(facts.landSqft) ||
      !this.saleAge.test(facts.saleAge) ||
      !this.qualifiedSaleAge.test(facts.qualifiedSaleAge)
    ) {
      return false;
    }
    if (this.counties !== undefined && !this.counties.has(facts.county)) {
      return false;
    }
    if (this.zipCodes !== undefined && (facts.zip5 === null || !this.zipCodes.has(facts.zip5))) {
      return false;
    }
    if (this.cities !== undefined && (facts.city === null || !this.cities.has(facts.city))) {
      return false;
    }
    if (
      this.dorUseCodes !== undefined &&
      (facts.dorUseCode === null || !this.dorUseCodes.has(facts.dorUseCode))
    ) {
      return false;
    }
    if (this.statesActive) {
      const state = facts.mailingState;
      if (
        state === null ||
        (this.includeStates !== undefined && !this.includeStates.has(state)) ||
        this.excludeStates?.has(state)
      ) {
        return false;
      }
    }
    return this.minScore <= 0 || this.#scoreReaches(bits);
  }

  #scoreReaches(bits: number): boolean {
    let fired = 0;
    const count = this.scoreBits.length;
    for (let index = 0; index < count; index++) {
      if ((bits & (this.scoreBits[index] as number)) !== 0) {
        fired += this.scoreWeights[index] as number;
      }
    }
    const raw = fired / this.positiveTotal;
    // Rounding moves the score by at most half a unit of the fourth decimal: away from the
    // threshold the raw score decides; near it, the exact rounded score does.
    if (raw >= this.minScore + 1e-4) {
      return true;
    }
    if (raw < this.minScore - 1e-4) {
      return false;
    }
    return roundScore(Math.min(1, Math.max(0, raw))) >= this.minScore;
  }
}

/**
 * Compiles a recipe into one predicate: true exactly when `evaluateRecipe` would say `matched`
 * (proven on random recipes and parcels in predicate.test.ts).
 */
export function compilePredicate(compiled: CompiledRecipe): Predicate {
  const predicate = new RecipePredicate(compiled);
  return (facts) => predicate.test(facts);
}

/** The predicate object itself, for callers that test many parcels in a tight loop. */
export function compileRecipePredicate(compiled: CompiledRecipe): {
  test(facts: ParcelFacts): boolean;
} {
  return new RecipePredicate(compiled);
}
