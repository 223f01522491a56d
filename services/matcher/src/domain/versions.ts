// Recipe versions. Editing a recipe never re-judges parcels already seen: each version carries
// the instant it came into force, and a parcel is judged by the version in force when the parcels
// service observed it (`parcel.ingested.observed_at`). A redelivered or replayed record is
// therefore judged exactly as it was the first time, and an edit applies to later ingests only.
import type { Recipe } from "@th/api-schemas";
import type { Instant } from "@th/contracts";
import { type NormalizedRecipe, normalizeRecipe, recipeFingerprint } from "./recipe.ts";

export interface RecipeVersion {
  watchlist_id: string;
  /** 1 for the watchlist's first recipe, then +1 for each recipe change. */
  version: number;
  recipe: NormalizedRecipe;
  /** `recipeFingerprint(recipe)`. */
  fingerprint: string;
  /** Parcels observed at or after this instant are judged by this version (until the next one). */
  effective_from: Instant;
}

function instantMs(instant: string, what: string): number {
  const ms = Date.parse(instant);
  if (Number.isNaN(ms)) {
    throw new RangeError(`${what} is not an RFC 3339 instant: ${JSON.stringify(instant)}`);
  }
  return ms;
}

/**
 * The version in force for a parcel observed at `observedAt`: the one with the latest
 * `effective_from` at or before it (the higher version number when two share an instant).
 * Undefined when the parcel was observed before the watchlist's first version: it did not
 * exist yet, so it cannot match.
 */
export function recipeVersionInForce(
  versions: readonly RecipeVersion[],
  observedAt: Instant,
): RecipeVersion | undefined {
  const observedMs = instantMs(observedAt, "observed_at");
  let inForce: RecipeVersion | undefined;
  let inForceMs = Number.NEGATIVE_INFINITY;
  for (const candidate of versions) {
    const fromMs = instantMs(candidate.effective_from, "effective_from");
    if (fromMs > observedMs) {
      continue;
    }
    if (
      inForce === undefined ||
      fromMs > inForceMs ||
      (fromMs === inForceMs && candidate.version > inForce.version)
    ) {
      inForce = candidate;
      inForceMs = fromMs;
    }
  }
  return inForce;
}

export type RecipeChange =
  | { changed: false; version: RecipeVersion }
  | { changed: true; version: RecipeVersion };

/**
 * The version a save produces. Saving a recipe whose fingerprint equals the current one's keeps
 * the current version (re-saving, reordering keys or writing "FLORIDA" for "FL" is not an edit).
 * A real change gets the next number, in force from `now`; if the clock stepped back behind the
 * current version, from the current version's instant, so versions never go back in time.
 */
export function nextRecipeVersion(
  current: RecipeVersion | undefined,
  watchlistId: string,
  recipe: Recipe,
  now: Instant,
): RecipeChange {
  const fingerprint = recipeFingerprint(recipe);
  if (current !== undefined && current.fingerprint === fingerprint) {
    return { changed: false, version: current };
  }
  const nowMs = instantMs(now, "now");
  const effectiveFrom =
    current !== undefined && instantMs(current.effective_from, "effective_from") > nowMs
      ? current.effective_from
      : new Date(nowMs).toISOString();
  return {
    changed: true,
    version: {
      watchlist_id: watchlistId,
      version: (current?.version ?? 0) + 1,
      recipe: normalizeRecipe(recipe),
      fingerprint,
      effective_from: effectiveFrom,
    },
  };
}
