import type { MatchFound } from "@th/contracts";
import type { Pool } from "@th/db";
import { traceContextOf } from "@th/telemetry";
import { insertDeliveries } from "../db/deliveries.ts";
import { EVENT_TYPE, webhookBody } from "../domain/payload.ts";

/** A `match.found` record as the intake needs it: the value and the record's headers. */
export interface MatchRecord {
  value: MatchFound;
  headers: Record<string, string>;
}

/**
 * Creates the deliveries of many `match.found` records in one statement: one row per
 * (subscribed endpoint, match), body fixed now, the record's trace context kept with it, created
 * at `at`; a redelivered record is a no-op. Answers how many rows were created.
 */
export async function intakeMatches(pool: Pool, records: readonly MatchRecord[], at: Date) {
  if (records.length === 0) {
    return 0;
  }
  const input = records.map((r) => {
    const trace = traceContextOf(r.headers);
    return {
      tenant_id: r.value.tenant_id,
      watchlist_id: r.value.watchlist.id,
      match_id: r.value.match_id,
      folio: r.value.match.folio,
      body: webhookBody(r.value),
      trace_context: Object.keys(trace).length > 0 ? trace : null,
    };
  });
  return insertDeliveries(pool, input, EVENT_TYPE, at);
}
