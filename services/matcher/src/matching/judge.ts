// Judging one ingested parcel against every watchlist of every tenant: the index names the few
// recipe versions in force that can match it and their compiled predicates decide (the
// predicate is proven equal to `evaluateRecipe(...).matched` in predicate.test.ts); the score
// and signals_fired of a match come from `scoreSignals`, the one definition of the score.
// `evaluateRecipe`, which also explains every failed rule, is for manual runs and support.
import type { ParcelIngested } from "@th/contracts";
import type { NewMatch } from "../db/matches.ts";
import { buildMatchFound } from "../domain/match-event.ts";
import { parcelFacts } from "../domain/predicate.ts";
import type { RecipeIndex } from "../domain/recipe-index.ts";
import { scoreSignals } from "../domain/score.ts";
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
    const evaluation = scoreSignals(entry.compiled.weights, parcel.signals_fired);
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
