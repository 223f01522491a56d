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
  const inserted = await pool.query(
    `INSERT INTO deliveries (id, endpoint_id, tenant_id, watchlist_id, match_id, folio,
                             event_type, body, trace_context)
     SELECT gen_random_uuid(), e.id, e.tenant_id, e.watchlist_id, m.match_id, m.folio, $6,
            m.body, m.trace_context::jsonb
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $7::text[])
            AS m(tenant_id, watchlist_id, match_id, folio, body, trace_context)
       JOIN endpoints e ON e.tenant_id = m.tenant_id AND e.watchlist_id = m.watchlist_id
                       AND e.deleted_at IS NULL AND $6 = ANY (e.events)
     ON CONFLICT (endpoint_id, match_id) DO NOTHING`,
    [
      records.map((r) => r.value.tenant_id),
      records.map((r) => r.value.watchlist.id),
      records.map((r) => r.value.match_id),
      records.map((r) => r.value.match.folio),
      records.map((r) => webhookBody(r.value)),
      EVENT_TYPE,
      records.map((r) => {
        const trace = traceContextOf(r.headers);
        return Object.keys(trace).length > 0 ? JSON.stringify(trace) : null;
      }),
    ],
  );
  return inserted.rowCount ?? 0;
}
