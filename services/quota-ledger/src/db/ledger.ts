import type { LeadViewRecorded } from "@th/contracts";
import type { Pool } from "@th/db";

/** Where a lead-view event sits in leadview.recorded. */
export interface EventPosition {
  partition: number;
  offset: string;
}

export interface DailyLeadViews {
  day: string;
  lead_views: number;
}

/**
 * One statement inserts the lead-view unless its (tenant, day, folio) is already in the ledger
 * and adds only the rows actually inserted to the period's counter, so the counter can never
 * drift from the rows, whatever is redelivered or duplicated.
 */
const RECORD_SQL = `
WITH inserted AS (
  INSERT INTO lead_views (tenant_id, day, folio, billing_period_start, surface, request_id,
    key_id, member_id, recorded_at, source_partition, source_offset)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
  ON CONFLICT DO NOTHING
  RETURNING tenant_id, billing_period_start
)
INSERT INTO period_usage (tenant_id, period_start, lead_views)
SELECT tenant_id, billing_period_start, 1 FROM inserted
ON CONFLICT (tenant_id, period_start)
DO UPDATE SET lead_views = period_usage.lead_views + EXCLUDED.lead_views`;

/**
 * RECORD_SQL for a whole batch in one statement (so one transaction): rows go in in log order,
 * so the first event of a (tenant, day, folio) wins as it does one at a time, a key twice in the
 * batch is inserted once, and each period's counter moves by the rows actually inserted.
 */
const RECORD_BATCH_SQL = `
WITH inserted AS (
  INSERT INTO lead_views (tenant_id, day, folio, billing_period_start, surface, request_id,
    key_id, member_id, recorded_at, source_partition, source_offset)
  SELECT v.tenant_id, v.day, v.folio, v.billing_period_start, v.surface, v.request_id,
         v.key_id, v.member_id, v.recorded_at, v.source_partition, v.source_offset
    FROM unnest($1::text[], $2::date[], $3::text[], $4::date[], $5::text[], $6::text[],
                $7::text[], $8::text[], $9::timestamptz[], $10::int[], $11::bigint[])
         WITH ORDINALITY AS v(tenant_id, day, folio, billing_period_start, surface, request_id,
                              key_id, member_id, recorded_at, source_partition, source_offset, ord)
   ORDER BY v.ord
  ON CONFLICT DO NOTHING
  RETURNING tenant_id, billing_period_start
)
INSERT INTO period_usage (tenant_id, period_start, lead_views)
SELECT tenant_id, billing_period_start, count(*) FROM inserted
 GROUP BY tenant_id, billing_period_start
ON CONFLICT (tenant_id, period_start)
DO UPDATE SET lead_views = period_usage.lead_views + EXCLUDED.lead_views`;

export function createLedger(pool: Pool) {
  return {
    /** Records the lead-views of one batch at once, in log order. */
    async recordBatch(
      views: readonly { view: LeadViewRecorded; position: EventPosition }[],
    ): Promise<void> {
      if (views.length === 0) {
        return;
      }
      await pool.query({
        name: "quota-ledger.record-batch",
        text: RECORD_BATCH_SQL,
        values: [
          views.map(({ view }) => view.tenant_id),
          views.map(({ view }) => view.day),
          views.map(({ view }) => view.folio),
          views.map(({ view }) => view.billing_period_start),
          views.map(({ view }) => view.surface),
          views.map(({ view }) => view.request_id),
          views.map(({ view }) => view.key_id),
          views.map(({ view }) => view.member_id),
          views.map(({ view }) => view.recorded_at),
          views.map(({ position }) => position.partition),
          views.map(({ position }) => position.offset),
        ],
      });
    },

    /** Records one lead-view; true when it was new to the ledger. */
    async record(view: LeadViewRecorded, position: EventPosition): Promise<boolean> {
      const result = await pool.query({
        name: "quota-ledger.record",
        text: RECORD_SQL,
        values: [
          view.tenant_id,
          view.day,
          view.folio,
          view.billing_period_start,
          view.surface,
          view.request_id,
          view.key_id,
          view.member_id,
          view.recorded_at,
          position.partition,
          position.offset,
        ],
      });
      return result.rowCount === 1;
    },

    /** What the gateway's meter seeds Redis with: the period's count and today's folios. */
    async seedFigures(
      tenantId: string,
      periodStart: string,
      day: string,
    ): Promise<{ used: number; foliosToday: string[] }> {
      const [usage, folios] = await Promise.all([
        pool.query<{ lead_views: number }>(
          "SELECT lead_views FROM period_usage WHERE tenant_id = $1 AND period_start = $2",
          [tenantId, periodStart],
        ),
        pool.query<{ folio: string }>(
          "SELECT folio FROM lead_views WHERE tenant_id = $1 AND day = $2 ORDER BY folio",
          [tenantId, day],
        ),
      ]);
      return {
        used: usage.rows[0]?.lead_views ?? 0,
        foliosToday: folios.rows.map((row) => row.folio),
      };
    },

    async periodUsage(
      tenantId: string,
      periodStart: string,
    ): Promise<{ used: number; daily: DailyLeadViews[] }> {
      const [usage, daily] = await Promise.all([
        pool.query<{ lead_views: number }>(
          "SELECT lead_views FROM period_usage WHERE tenant_id = $1 AND period_start = $2",
          [tenantId, periodStart],
        ),
        pool.query<DailyLeadViews>(
          `SELECT to_char(day, 'YYYY-MM-DD') AS day, count(*)::int AS lead_views
           FROM lead_views WHERE tenant_id = $1 AND billing_period_start = $2
           GROUP BY day ORDER BY day`,
          [tenantId, periodStart],
        ),
      ]);
      return { used: usage.rows[0]?.lead_views ?? 0, daily: daily.rows };
    },
  };
}

export type Ledger = ReturnType<typeof createLedger>;
