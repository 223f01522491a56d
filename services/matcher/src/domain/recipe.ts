// The canonical form of a recipe: what the matcher stores, returns, fingerprints and evaluates.
// Two recipes that select and score exactly the same parcels the same way normalize to the same
// value, so re-saving an unchanged recipe (or one with "FLORIDA" for "FL", or its lists in another
// order) does not start a new recipe version.
import { createHash } from "node:crypto";
import {
  type LeadSignal,
  normalizeStateCode,
  RECIPE_USE_CLASSES,
  type Recipe,
  type RecipeFilters,
  type RecipeRange,
} from "@th/api-schemas";
import { canonicalJson } from "./canonical-json.ts";

/** A valid recipe with every top-level field present and every list sorted and de-duplicated. */
export interface NormalizedRecipe {
  filters: RecipeFilters;
  signals: Partial<Record<LeadSignal, number>>;
  required_signals: LeadSignal[];
  excluded_signals: LeadSignal[];
  min_score: number;
  allow_match_all: boolean;
}

/** Situs cities on the roll are upper case with single spaces; recipes are compared the same way. */
export function normalizeCity(city: string): string {
  return city.trim().replace(/\s+/g, " ").toUpperCase();
}

function sortedUnique<T extends string | number>(values: readonly T[]): T[] {
  return [...new Set(values)].sort((a, b) =>
    typeof a === "number" && typeof b === "number" ? a - b : String(a) < String(b) ? -1 : 1,
  );
}

function copyRange(range: RecipeRange | undefined): RecipeRange | undefined {
  if (range === undefined) {
    return undefined;
  }
  return {
    ...(range.min !== undefined ? { min: range.min } : {}),
    ...(range.max !== undefined ? { max: range.max } : {}),
  };
}

function stateCodes(states: readonly string[] | undefined): string[] | undefined {
  if (states === undefined) {
    return undefined;
  }
  // Validation already refused names that map to no state; the filter keeps the types honest.
  return sortedUnique(
    states.map(normalizeStateCode).filter((code): code is string => code !== null),
  );
}

function normalizeFilters(filters: RecipeFilters): RecipeFilters {
  const states = filters.owner_mailing_states;
  const include = stateCodes(states?.include);
  const exclude = stateCodes(states?.exclude);
  const normalized: RecipeFilters = {
    counties: filters.counties && sortedUnique(filters.counties),
    cities: filters.cities && sortedUnique(filters.cities.map(normalizeCity)),
    zip_codes: filters.zip_codes && sortedUnique(filters.zip_codes),
    use_classes:
      filters.use_classes &&
      RECIPE_USE_CLASSES.filter((useClass) => filters.use_classes?.includes(useClass)),
    dor_use_codes: filters.dor_use_codes && sortedUnique(filters.dor_use_codes),
    just_value: copyRange(filters.just_value),
    est_equity: copyRange(filters.est_equity),
    equity_ratio: copyRange(filters.equity_ratio),
    year_built: copyRange(filters.year_built),
    living_area_sqft: copyRange(filters.living_area_sqft),
    land_sqft: copyRange(filters.land_sqft),
    last_sale_age_years: copyRange(filters.last_sale_age_years),
    last_qualified_sale_age_years: copyRange(filters.last_qualified_sale_age_years),
    owner_mailing_states:
      states &&
      ({
        ...(include !== undefined ? { include } : {}),
        ...(exclude !== undefined ? { exclude } : {}),
      } as RecipeFilters["owner_mailing_states"]),
    homestead: filters.homestead,
  };
  // Absent filters are left out rather than kept as `undefined`, so the stored JSON is minimal.
  return Object.fromEntries(
    Object.entries(normalized).filter(([, value]) => value !== undefined),
  ) as RecipeFilters;
}

/**
 * The canonical form of a recipe that passed `recipeSchema`. Idempotent. Defaults made explicit:
 * no filters, no signals, `min_score` 0, `allow_match_all` false.
 */
export function normalizeRecipe(recipe: Recipe): NormalizedRecipe {
  const signals: Partial<Record<LeadSignal, number>> = {};
  for (const signal of Object.keys(recipe.signals ?? {}).sort() as LeadSignal[]) {
    const weight = recipe.signals?.[signal];
    if (weight !== undefined) {
      signals[signal] = weight;
    }
  }
  return {
    filters: normalizeFilters(recipe.filters ?? {}),
    signals,
    required_signals: sortedUnique(recipe.required_signals ?? []),
    excluded_signals: sortedUnique(recipe.excluded_signals ?? []),
    min_score: recipe.min_score ?? 0,
    allow_match_all: recipe.allow_match_all ?? false,
  };
}

/**
 * Hex SHA-256 of the canonical JSON of the normalized recipe. Stable under key order, list
 * order, duplicate list entries, state spelling and city case; changes with anything that could
 * change which parcels match or how they score.
 */
export function recipeFingerprint(recipe: Recipe): string {
  return createHash("sha256")
    .update(canonicalJson(normalizeRecipe(recipe)))
    .digest("hex");
}
