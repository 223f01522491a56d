import type { MatchFound } from "@th/contracts";

export const EVENT_TYPE = "watchlist.match";

/** What an unknown mailing state is in the payload: the spec types it a string. */
const UNKNOWN_MAILING_STATE = "";
/** What an equity the roll cannot support is in the payload: the spec types it a number. */
const UNESTIMATED_EQUITY = 0;

/**
 * The `watchlist.match` body. Serialised once when the delivery is created and stored as text, so
 * every attempt and replay sends the same bytes. `event_id` is the match id: one event, delivered
 * to each subscribed endpoint under its own webhook id. The match event allows null where the
 * roll gives nothing; the payload keeps the spec's types (docs/webhooks.md, "Payload types").
 */
export function webhookBody(match: MatchFound): string {
  return JSON.stringify({
    event_id: match.match_id,
    event_type: EVENT_TYPE,
    occurred_at: match.occurred_at,
    tenant_id: match.tenant_id,
    watchlist: { id: match.watchlist.id, name: match.watchlist.name },
    match: {
      folio: match.match.folio,
      address: match.match.address,
      score: match.match.score,
      signals_fired: match.match.signals_fired,
      owner: {
        name: match.match.owner.name,
        mailing_state: match.match.owner.mailing_state ?? UNKNOWN_MAILING_STATE,
      },
      valuation: {
        just_value: match.match.valuation.just_value,
        est_equity: match.match.valuation.est_equity ?? UNESTIMATED_EQUITY,
      },
      observed_at: match.match.observed_at,
    },
  });
}
