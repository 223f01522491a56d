// Which recipe versions a parcel has to be tested against. Every version is filed under exactly
// one key of its most selective indexable condition (a ZIP code, a city, a county, a required
// signal, a use class), or in the small "unindexed" list when it has none of them. A parcel
// then looks up only the buckets of its own ZIP, city, county, signals and use class: a recipe
// filed under county 23 can never match a parcel of county 16, so it is never looked at.
//
// Every candidate is then checked for being the version in force at the parcel's observed_at
// (the versions of one watchlist cover disjoint time spans) and tested with its compiled predicate.
import { LEAD_SIGNALS } from "@th/api-schemas";
import { type CompiledRecipe, compileRecipe } from "./evaluate.ts";
import { compilePredicate, type ParcelFacts, type Predicate, signalBit } from "./predicate.ts";
import type { NormalizedRecipe } from "./recipe.ts";

/** One recipe version of one watchlist, with the span of observed_at it judges. */
export interface IndexedVersion<W> {
  readonly watchlist: W;
  readonly version: number;
  readonly compiled: CompiledRecipe;
  readonly predicate: Predicate;
  /** Judges parcels observed at or after this instant (ms)... */
  readonly fromMs: number;
  /** ...and before this one (the next version's effective_from; +Infinity for the current one). */
  readonly untilMs: number;
}

export interface VersionInput {
  version: number;
  recipe: NormalizedRecipe;
  effectiveFromMs: number;
}

type IndexKey =
  | { kind: "zip"; values: readonly string[] }
  | { kind: "city"; values: readonly string[] }
  | { kind: "county"; values: readonly number[] }
  | { kind: "signal"; values: readonly string[] }
  | { kind: "use_class"; values: readonly string[] }
  | { kind: "none" };

// Rough share of Florida parcels one key value selects; only the ordering matters.
const USE_CLASS_SHARE: Readonly<Record<string, number>> = { residential: 0.8 };
const SIGNAL_SHARE = 0.25;

/** The key under which a recipe is filed: the one expected to select the fewest parcels. */
export function indexKeyOf(recipe: NormalizedRecipe): IndexKey {
  const { filters } = recipe;
  const options: { key: IndexKey; share: number }[] = [];
  if (filters.zip_codes) {
    options.push({
      key: { kind: "zip", values: filters.zip_codes },
      share: filters.zip_codes.length / 1500,
    });
  }
  if (filters.cities) {
    options.push({
      key: { kind: "city", values: filters.cities },
      share: filters.cities.length / 400,
    });
  }
  if (filters.counties) {
    options.push({
      key: { kind: "county", values: filters.counties },
      share: filters.counties.length / 67,
    });
  }
  if (recipe.required_signals.length > 0) {
    // Filed under one required signal: a parcel without it cannot match.
    const first = recipe.required_signals[0] as string;
    options.push({ key: { kind: "signal", values: [first] }, share: SIGNAL_SHARE });
  }
  if (filters.use_classes) {
    const share = filters.use_classes.reduce((sum, c) => sum + (USE_CLASS_SHARE[c] ?? 0.05), 0);
    options.push({ key: { kind: "use_class", values: filters.use_classes }, share });
  }
  options.sort((a, b) => a.share - b.share);
  return options[0]?.key ?? { kind: "none" };
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V) {
  const list = map.get(key);
  if (list) {
    list.push(value);
  } else {
    map.set(key, [value]);
  }
}

/** Compiles one watchlist's versions into indexable entries, each with its span of force. */
export function compileVersions<W>(
  watchlist: W,
  versions: readonly VersionInput[],
  compile: (recipe: NormalizedRecipe, version: number) => CompiledRecipe = (recipe) =>
    compileRecipe(recipe),
): IndexedVersion<W>[] {
  const sorted = [...versions].sort((a, b) => a.version - b.version);
  return sorted.map((entry, index) => {
    const compiled = compile(entry.recipe, entry.version);
    // recipeVersionInForce: the latest effective_from at or before observed_at, the higher
    // version on a tie. effective_from never decreases with the version, so a version is in
    // force from its instant until the next version's (an empty span when they are equal).
    let untilMs = Number.POSITIVE_INFINITY;
    for (const later of sorted.slice(index + 1)) {
      untilMs = Math.min(untilMs, later.effectiveFromMs);
    }
    return {
      watchlist,
      version: entry.version,
      compiled,
      predicate: compilePredicate(compiled),
      fromMs: entry.effectiveFromMs,
      untilMs,
    };
  });
}

export interface IndexStats {
  versions: number;
  unindexed: number;
}

export class RecipeIndex<W> {
  readonly #byZip = new Map<string, IndexedVersion<W>[]>();
  readonly #byCity = new Map<string, IndexedVersion<W>[]>();
  readonly #byCounty = new Map<number, IndexedVersion<W>[]>();
  readonly #bySignal: IndexedVersion<W>[][] = LEAD_SIGNALS.map(() => []);
  readonly #byUseClass = new Map<string, IndexedVersion<W>[]>();
  readonly #unindexed: IndexedVersion<W>[] = [];
  readonly #signalBits: number[] = LEAD_SIGNALS.map((signal) => signalBit(signal));
  readonly stats: IndexStats;

  constructor(entries: Iterable<IndexedVersion<W>>) {
    let versions = 0;
    for (const entry of entries) {
      versions++;
      const key = indexKeyOf(entry.compiled.recipe);
      switch (key.kind) {
        case "zip":
          for (const value of key.values) {
            push(this.#byZip, value, entry);
          }
          break;
        case "city":
          for (const value of key.values) {
            push(this.#byCity, value, entry);
          }
          break;
        case "county":
          for (const value of key.values) {
            push(this.#byCounty, value, entry);
          }
          break;
        case "signal":
          this.#bySignal[
            LEAD_SIGNALS.indexOf(key.values[0] as (typeof LEAD_SIGNALS)[number])
          ]?.push(entry);
          break;
        case "use_class":
          for (const value of key.values) {
            push(this.#byUseClass, value, entry);
          }
          break;
        default:
          this.#unindexed.push(entry);
      }
    }
    this.stats = { versions, unindexed: this.#unindexed.length };
  }

  /** Calls `visit` with every version that could match the parcel (each at most once). */
  forEachCandidate(facts: ParcelFacts, visit: (entry: IndexedVersion<W>) => void): void {
    const visitList = (list: readonly IndexedVersion<W>[] | undefined) => {
      if (list === undefined) {
        return;
      }
      for (let index = 0; index < list.length; index++) {
        visit(list[index] as IndexedVersion<W>);
      }
    };
    if (facts.zip5 !== null) {
      visitList(this.#byZip.get(facts.zip5));
    }
    if (facts.city !== null) {
      visitList(this.#byCity.get(facts.city));
    }
    visitList(this.#byCounty.get(facts.county));
    if (facts.signalBits !== 0) {
      for (let index = 0; index < this.#signalBits.length; index++) {
        if ((facts.signalBits & (this.#signalBits[index] as number)) !== 0) {
          visitList(this.#bySignal[index]);
        }
      }
    }
    if (facts.useClass !== null) {
      visitList(this.#byUseClass.get(facts.useClass));
    }
    visitList(this.#unindexed);
  }

  /** The versions in force at the parcel's observed_at that match it. */
  matching(facts: ParcelFacts): IndexedVersion<W>[] {
    const found: IndexedVersion<W>[] = [];
    const observed = facts.observedMs;
    this.forEachCandidate(facts, (entry) => {
      if (observed >= entry.fromMs && observed < entry.untilMs && entry.predicate(facts)) {
        found.push(entry);
      }
    });
    return found;
  }
}
