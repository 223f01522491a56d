// Judging one ingested parcel against every watchlist of every tenant: the index names the few
// recipe versions in force that can match it, their compiled predicates pre-test it, and
// `evaluateRecipe` (the one definition of a match and its score) decides and explains.
import type { ParcelIngested } from "@th/contracts";
import type { NewMatch } from "../db/matches.ts";
import { evaluateRecipe } from "../domain/evaluate.ts";
import { buildMatchFound } from "../domain/match-event.ts";
import { parcelFacts } from "../domain/predicate.ts";
import type { RecipeIndex } from "../domain/recipe-index.ts";
import type { CachedWatchlist } from "./watchlist-cache.ts";

/** The matches of one parcel; throws UnjudgeableParcelError for a parcel that cannot be judged. */
export function judgeParcel(
  index: RecipeIndex<CachedWatchlist>,
  parcel: ParcelIngested,
  occurredAt: string,
): NewMatch[] {
  const facts = parcelFacts(parcel);
  const candidates = index.matching(facts);
  if (candidates.length === 0) {
    return [];
  }
  const matches: NewMatch[] = [];
  for (const entry of candidates) {
    const evaluation = evaluateRecipe(entry.compiled, parcel);
    if (!evaluation.matched) {
      // The predicate mirrors evaluateRecipe exactly (predicate.test.ts); evaluateRecipe wins.
      continue;
    }
    matches.push({
      runId: null,
      event: buildMatchFound({
        tenantId: entry.watchlist.tenantId,
        watchlist: entry.watchlist,
        recipeVersion: entry.version,
        parcel,
        evaluation,
        trigger: "ingest",
        runId: null,
        occurredAt,
      }),
    });
  }
  return matches;
}
