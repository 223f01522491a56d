import { utcDayOf } from "@th/contracts";
import type { Pool } from "@th/db";
import { LEAD_VIEW_COUNTER_PREFIX } from "@th/quota";
import type { Redis } from "ioredis";
import { currentPeriod } from "../domain/period.ts";

export interface CounterDrift {
  /** Tenants whose Redis period counter differs from the ledger's count. */
  tenants: number;
  /** The differences added up, in lead-views, whichever way each goes. */
  leadViews: number;
}

const MGET_CHUNK = 500;

/**
 * Compares every tenant's current-period lead-view counter in Redis (what the edge meters
 * against) with the ledger's count (what is billed). A counter Redis does not hold is not drift:
 * the meter seeds it from the ledger on next use. While reads are in flight the two differ for a
 * moment; a difference that stays is drift (a lost or stale counter), repaired by
 * `npm run ledger:rebuild`.
 */
export async function measureCounterDrift(
  pool: Pool,
  redis: Redis,
  at: Date,
): Promise<CounterDrift> {
  const { rows: tenants } = await pool.query<{
    tenant_id: string;
    billing_anniversary: string | null;
  }>(
    "SELECT tenant_id, to_char(billing_anniversary, 'YYYY-MM-DD') AS billing_anniversary FROM tenants",
  );
  const periods = tenants.map((tenant) => ({
    tenantId: tenant.tenant_id,
    start: utcDayOf(currentPeriod(tenant.billing_anniversary, at).start),
  }));
  const { rows: usage } = await pool.query<{ tenant_id: string; lead_views: number }>(
    `SELECT u.tenant_id, u.lead_views
       FROM period_usage u
       JOIN unnest($1::text[], $2::date[]) AS p(tenant_id, period_start)
         ON u.tenant_id = p.tenant_id AND u.period_start = p.period_start`,
    [periods.map((period) => period.tenantId), periods.map((period) => period.start)],
  );
  const ledger = new Map(usage.map((row) => [row.tenant_id, row.lead_views]));
  const drift: CounterDrift = { tenants: 0, leadViews: 0 };
  for (let i = 0; i < periods.length; i += MGET_CHUNK) {
    const chunk = periods.slice(i, i + MGET_CHUNK);
    const counters = await redis.mget(
      chunk.map((period) => `th:${LEAD_VIEW_COUNTER_PREFIX}${period.tenantId}:${period.start}`),
    );
    chunk.forEach((period, index) => {
      const counter = counters[index];
      if (counter === null || counter === undefined) {
        return;
      }
      const difference = Math.abs(Number(counter) - (ledger.get(period.tenantId) ?? 0));
      if (difference > 0) {
        drift.tenants++;
        drift.leadViews += difference;
      }
    });
  }
  return drift;
}
