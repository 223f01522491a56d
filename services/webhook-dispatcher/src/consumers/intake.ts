import type { MatchFound } from "@th/contracts";
import type { Pool } from "@th/db";
import { traceContextOf } from "@th/telemetry";
import { EVENT_TYPE, webhookBody } from "../domain/payload.ts";

/** A `match.found` record as the intake needs it: the value and the record's headers. */
export interface MatchRecord {
  value: MatchFound;
  headers: Record<string, string>;
}

/**
 * Creates the deliveries of many `match.found` records in one statement: one row per
 * (subscribed endpoint, match), body fixed now, the record's trace context kept with it, and
 * `ON CONFLICT DO NOTHING` on (endpoint, match) so a redelivered record is a no-op. Answers how
 * many rows were created.
 */
export async function insertDeliveries(pool: Pool, records: readonly MatchRecord[]) {
  if (records.length === 0) {
    return 0;
  }
  // One JSON document rather than Postgres arrays: serialising it is one native call, where
  // array parameters are escaped element by element.
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
  const inserted = await pool.query({
    // Named: planned once per connection, as its plan does not depend on the values.
    name: "dispatcher-insert-deliveries",
    text: `INSERT INTO deliveries (id, endpoint_id, tenant_id, watchlist_id, match_id, folio,
                             event_type, body, trace_context)
     SELECT gen_random_uuid(), e.id, e.tenant_id, e.watchlist_id, m.match_id, m.folio, $2,
            m.body, m.trace_context
       FROM json_to_recordset($1::json)
            AS m(tenant_id text, watchlist_id text, match_id text, folio text, body text,
                 trace_context jsonb)
       JOIN endpoints e ON e.tenant_id = m.tenant_id AND e.watchlist_id = m.watchlist_id
                       AND e.deleted_at IS NULL AND $2 = ANY (e.events)
     ON CONFLICT (endpoint_id, match_id) DO NOTHING`,
    values: [JSON.stringify(input), EVENT_TYPE],
  });
  return inserted.rowCount ?? 0;
}
