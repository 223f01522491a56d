// The `match.found` record of one match: the spec's `watchlist.match` payload fields plus the
// tenant and watchlist. Built from the parcel as judged and the evaluation that matched it.
import {
  formatAddress,
  type MatchFound,
  type MatchTrigger,
  type ParcelIngested,
} from "@th/contracts";
import type { RecipeEvaluation } from "./evaluate.ts";
import { matchId } from "./match-id.ts";

/**
 * The id of a match. An ingest match is `matchId(watchlist, version, folio, content_hash)`, so a
 * redelivered record yields the same id. A manual run's matches add the run id: each run is a
 * fresh set of test deliveries, and never collides with (or suppresses) an ingest match.
 */
export function matchIdFor(
  watchlistId: string,
  recipeVersion: number,
  parcel: ParcelIngested,
  runId: string | null,
): string {
  return matchId(
    watchlistId,
    recipeVersion,
    parcel.folio,
    runId === null ? parcel.content_hash : `${parcel.content_hash}#run:${runId}`,
  );
}

export function buildMatchFound(input: {
  tenantId: string;
  watchlist: { id: string; name: string };
  recipeVersion: number;
  parcel: ParcelIngested;
  evaluation: Pick<RecipeEvaluation, "score" | "signals_fired">;
  trigger: MatchTrigger;
  runId: string | null;
  occurredAt: string;
}): MatchFound {
  const { parcel } = input;
  return {
    match_id: matchIdFor(input.watchlist.id, input.recipeVersion, parcel, input.runId),
    tenant_id: input.tenantId,
    watchlist: { id: input.watchlist.id, name: input.watchlist.name },
    recipe_version: input.recipeVersion,
    trigger: input.trigger,
    ingest_id: input.trigger === "ingest" ? parcel.ingest_id : null,
    parcel_content_hash: parcel.content_hash,
    match: {
      folio: parcel.folio,
      address: formatAddress(parcel.situs),
      score: input.evaluation.score,
      signals_fired: [...input.evaluation.signals_fired],
      owner: { name: parcel.owner.name, mailing_state: parcel.owner.mailing_state },
      valuation: {
        just_value: parcel.valuation.just_value,
        est_equity: parcel.valuation.est_equity,
      },
      observed_at: parcel.observed_at,
    },
    occurred_at: input.occurredAt,
  };
}
