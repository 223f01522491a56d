// Which recipe versions a parcel has to be tested against. Every version is filed under exactly
// one key of its most selective place-or-kind condition (a ZIP code, a city, a county, a use
// class; "anywhere" when it has none), and within it under its first required signal (or "no
// required signal"). A parcel looks up only the buckets of its own ZIP, city, county and use
// class, and in each only the signals it fired: a recipe filed under county 23 and
// `vacant_land` is never looked at for a parcel of county 16, nor for one without that signal.
//
// Every candidate is then checked for being the version in force at the parcel's observed_at
// (the versions of one watchlist cover disjoint time spans) and tested with its compiled predicate.
import { LEAD_SIGNALS } from "@th/api-schemas";
import { type CompiledRecipe, compileRecipe } from "./evaluate.ts";
import {
  compilePredicate,
  compileRecipePredicate,
  type ParcelFacts,
  type Predicate,
  signalBit,
} from "./predicate.ts";
import type { NormalizedRecipe } from "./recipe.ts";

/** One recipe version of one watchlist, with the span of observed_at it judges. */
export interface IndexedVersion<W> {
  readonly watchlist: W;
  readonly version: number;
  readonly compiled: CompiledRecipe;
  readonly predicate: Predicate;
  /** The same test as `predicate`, called as a method (monomorphic in the hot loop). */
  readonly test: { test(facts: ParcelFacts): boolean };
  /** Judges parcels observed at or after this instant (ms)... */
  readonly fromMs: number;
  /** ...and before this one (the next version's effective_from; +Infinity for the current one). */
  readonly untilMs: number;
  /** Signals that must all have fired / none may have fired, as bits: a quick first test. */
  readonly requiredBits: number;
  readonly excludedBits: number;
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
  | { kind: "use_class"; values: readonly string[] }
  | { kind: "none" };

// Rough share of Florida parcels one key value selects; only the ordering matters.
const USE_CLASS_SHARE: Readonly<Record<string, number>> = { residential: 0.8 };

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
  if (filters.use_classes) {
    const share = filters.use_classes.reduce((sum, c) => sum + (USE_CLASS_SHARE[c] ?? 0.05), 0);
    options.push({ key: { kind: "use_class", values: filters.use_classes }, share });
  }
  options.sort((a, b) => a.share - b.share);
  return options[0]?.key ?? { kind: "none" };
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
    let requiredBits = 0;
    for (const signal of compiled.recipe.required_signals) {
      requiredBits |= signalBit(signal);
    }
    let excludedBits = 0;
    for (const signal of compiled.recipe.excluded_signals) {
      excludedBits |= signalBit(signal);
    }
    return {
      watchlist,
      version: entry.version,
      compiled,
      predicate: compilePredicate(compiled),
      test: compileRecipePredicate(compiled),
      fromMs: entry.effectiveFromMs,
      untilMs,
      requiredBits,
      excludedBits,
    };
  });
}

export interface IndexStats {
  versions: number;
  unindexed: number;
}

const NO_SIGNAL = LEAD_SIGNALS.length;

/** One primary key's versions, split by their first required signal (last slot: none). */
class Bucket<W> {
  readonly bySignal: IndexedVersion<W>[][] = Array.from({ length: NO_SIGNAL + 1 }, () => []);

  add(entry: IndexedVersion<W>): void {
    const first = entry.compiled.recipe.required_signals[0];
    const slot = first === undefined ? NO_SIGNAL : LEAD_SIGNALS.indexOf(first);
    this.bySignal[slot < 0 ? NO_SIGNAL : slot]?.push(entry);
  }
}

function bucketOf<K, W>(map: Map<K, Bucket<W>>, key: K): Bucket<W> {
  let bucket = map.get(key);
  if (!bucket) {
    bucket = new Bucket<W>();
    map.set(key, bucket);
  }
  return bucket;
}

export class RecipeIndex<W> {
  readonly #byZip = new Map<string, Bucket<W>>();
  readonly #byCity = new Map<string, Bucket<W>>();
  readonly #byCounty = new Map<number, Bucket<W>>();
  readonly #byUseClass = new Map<string, Bucket<W>>();
  readonly #anywhere = new Bucket<W>();
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
            bucketOf(this.#byZip, value).add(entry);
          }
          break;
        case "city":
          for (const value of key.values) {
            bucketOf(this.#byCity, value).add(entry);
          }
          break;
        case "county":
          for (const value of key.values) {
            bucketOf(this.#byCounty, value).add(entry);
          }
          break;
        case "use_class":
          for (const value of key.values) {
            bucketOf(this.#byUseClass, value).add(entry);
          }
          break;
        default:
          this.#anywhere.add(entry);
      }
    }
    this.stats = {
      versions,
      unindexed: this.#anywhere.bySignal[NO_SIGNAL]?.length ?? 0,
    };
  }

  /** The buckets a parcel can match in, filled into `lists` (reused to spare allocations). */
  #candidateLists(facts: ParcelFacts, lists: (readonly IndexedVersion<W>[])[]): void {
    const buckets = [
      facts.zip5 === null ? undefined : this.#byZip.get(facts.zip5),
      facts.city === null ? undefined : this.#byCity.get(facts.city),
      this.#byCounty.get(facts.county),
      facts.useClass === null ? undefined : this.#byUseClass.get(facts.useClass),
      this.#anywhere,
    ];
    const bits = facts.signalBits;
    for (const bucket of buckets) {
      if (bucket === undefined) {
        continue;
      }
      const none = bucket.bySignal[NO_SIGNAL] as IndexedVersion<W>[];
      if (none.length > 0) {
        lists.push(none);
      }
      if (bits === 0) {
        continue;
      }
      for (let index = 0; index < NO_SIGNAL; index++) {
        if ((bits & (this.#signalBits[index] as number)) !== 0) {
          const list = bucket.bySignal[index] as IndexedVersion<W>[];
          if (list.length > 0) {
            lists.push(list);
          }
        }
      }
    }
  }

  /** Calls `visit` with every version that could match the parcel (each at most once). */
  forEachCandidate(facts: ParcelFacts, visit: (entry: IndexedVersion<W>) => void): void {
    const lists: (readonly IndexedVersion<W>[])[] = [];
    this.#candidateLists(facts, lists);
    for (const list of lists) {
      for (const entry of list) {
        visit(entry);
      }
    }
  }

  /** The versions in force at the parcel's observed_at that match it. */
  matching(facts: ParcelFacts): IndexedVersion<W>[] {
    const found: IndexedVersion<W>[] = [];
    const lists: (readonly IndexedVersion<W>[])[] = [];
    this.#candidateLists(facts, lists);
    const bits = facts.signalBits;
    const observed = facts.observedMs;
    for (let at = 0; at < lists.length; at++) {
      const list = lists[at] as readonly IndexedVersion<W>[];
      for (let index = 0; index < list.length; index++) {
        const entry = list[index] as IndexedVersion<W>;
        if (
          (bits & entry.requiredBits) === entry.requiredBits &&
          (bits & entry.excludedBits) === 0 &&
          observed >= entry.fromMs &&
          observed < entry.untilMs &&
          entry.test.test(facts)
        ) {
          found.push(entry);
        }
      }
    }
    return found;
  }
}
