import { escapeIdentifier, type Pool } from "@th/db";
import {
  createRetention,
  deleteInBatches,
  dropExpiredPartitions,
  listPartitions,
  type Metrics,
  type Retention,
  type RetentionRule,
} from "@th/service-kit";
import type { Logger } from "@th/telemetry";
import {
  daysMs,
  leadViewExpiry,
  leadViewHorizon,
  voidWindowExpiry,
  voidWindowKeepMs,
  voidWindowStart,
} from "../domain/retention.ts";
import { advanceLeadViewHorizon, ensureLeadViewMonths, LEAD_VIEWS } from "./partitions.ts";

/** What the ledger keeps, and how long (decision 0393). */
export interface LedgerRetentionSettings {
  /** Lead-views are kept at least this long, and removed with their month. */
  leadViewKeepDays: number;
  /** Days after a read's UTC day during which a void of it can still arrive. */
  voidWindowDays: number;
}

/**
 * The oldest day lead_views holds, found through the primary key of each partition: the tenants
 * one after another (each a step of the index), then each tenant's first day. Tens of index steps
 * per tenant rather than a read of the oldest month.
 */
const OLDEST_LEAD_VIEW_SQL = `
WITH RECURSIVE tenant AS (
  (SELECT tenant_id FROM lead_views ORDER BY tenant_id LIMIT 1)
  UNION ALL
  SELECT (SELECT l.tenant_id FROM lead_views l WHERE l.tenant_id > t.tenant_id
           ORDER BY l.tenant_id LIMIT 1)
    FROM tenant t WHERE t.tenant_id IS NOT NULL
)
SELECT to_char(min(first.day), 'YYYY-MM-DD') AS day
  FROM tenant t CROSS JOIN LATERAL (
    SELECT l.day FROM lead_views l WHERE l.tenant_id = t.tenant_id ORDER BY l.day LIMIT 1
  ) AS first
 WHERE t.tenant_id IS NOT NULL`;

/**
 * Deletes up to $2 rows of days before the horizon ($1) from `partition`, the first partition:
 * only it, made from the table as it was before partitioning, ever has any (every later
 * partition is one month, dropped whole once the horizon passes it).
 *
 * Its indexes lead with tenant_id and Postgres 15 cannot skip-scan them, so a filter on day alone
 * reads the whole partition, every round until it is dropped a year or so after the upgrade.
 * The statement walks the key instead, one index probe per tenant (the tenant's first entry holds
 * its oldest day), and reads a key range only of tenants whose oldest day is expired, stopping
 * at a batch; the rows go by TID (unique within the one partition it targets). Not an index on
 * day: built on a partition this large it would block writes, or need a concurrent build outside
 * the migrations' transactions, for a partition that only shrinks.
 */
function expiredInFirstPartitionSql(partition: string): string {
  const first = escapeIdentifier(partition);
  return `
WITH RECURSIVE tenant AS (
  (SELECT tenant_id, day FROM ${first} ORDER BY tenant_id, day, folio LIMIT 1)
  UNION ALL
  SELECT next.tenant_id, next.day
    FROM tenant t CROSS JOIN LATERAL (
      SELECT e.tenant_id, e.day FROM ${first} e WHERE e.tenant_id > t.tenant_id
       ORDER BY e.tenant_id, e.day, e.folio LIMIT 1) AS next
)
DELETE FROM ${first} l
 WHERE l.day < $1
   AND l.ctid = ANY(ARRAY(
     SELECT expired.ctid
       FROM tenant t CROSS JOIN LATERAL (
         SELECT e.ctid FROM ${first} e WHERE e.tenant_id = t.tenant_id AND e.day < $1
          ORDER BY e.day, e.folio LIMIT $2) AS expired
      WHERE t.day < $1
      LIMIT $2))`;
}

/** A batch of the first partition's expired rows, deleted; 0 once the partition is gone. */
async function deleteExpiredInFirstPartition(
  pool: Pool,
  horizon: Date,
  limit: number,
): Promise<number> {
  const first = (await listPartitions(pool, LEAD_VIEWS)).find((p) => p.from === null);
  if (!first) {
    return 0;
  }
  return deleteInBatches(pool, expiredInFirstPartitionSql(first.name), [horizon], limit);
}

async function oldestLeadViewDay(pool: Pool): Promise<string | null> {
  const { rows } = await pool.query<{ day: string | null }>(OLDEST_LEAD_VIEW_SQL);
  return rows[0]?.day ?? null;
}

/**
 * lead_views, the billing record: kept at least `keepDays` (leadview.recorded's span, so the
 * rebuild can always compare what the log holds), then dropped a month at a time. The horizon
 * moves first, so an event of a dropped month is never recorded again.
 */
export function leadViewsRule(keepDays: number): RetentionRule {
  return {
    table: "quota_ledger.lead_views",
    relation: LEAD_VIEWS,
    keepMs: daysMs(keepDays),
    async prepare(pool, now) {
      await ensureLeadViewMonths(pool, now);
    },
    async sweep(pool, now, limit) {
      const horizon = leadViewHorizon(now, keepDays);
      await advanceLeadViewHorizon(pool, horizon);
      const dropped = await dropExpiredPartitions(pool, LEAD_VIEWS, horizon);
      if (dropped > 0) {
        return dropped;
      }
      return deleteExpiredInFirstPartition(pool, horizon, limit);
    },
    async oldestRowAgeMs(pool, now) {
      const day = await oldestLeadViewDay(pool);
      return day === null ? null : now.getTime() - Date.parse(`${day}T00:00:00Z`);
    },
    async behindMs(pool, now) {
      const day = await oldestLeadViewDay(pool);
      return day === null ? null : now.getTime() - leadViewExpiry(day, keepDays).getTime();
    },
  };
}

/**
 * A table of rows kept only while a void of their day can still arrive, removed the day after,
 * a batch at a time through its index on day.
 */
function voidWindowRule(table: string, windowDays: number): RetentionRule {
  const oldest = `SELECT to_char(min(day), 'YYYY-MM-DD') AS day FROM ${table}`;
  const oldestDay = async (pool: Pool) =>
    (await pool.query<{ day: string | null }>(oldest)).rows[0]?.day ?? null;
  return {
    table: `quota_ledger.${table}`,
    relation: table,
    keepMs: voidWindowKeepMs(windowDays),
    async sweep(pool, now, limit) {
      return deleteInBatches(
        pool,
        `DELETE FROM ${table} WHERE ctid = ANY(ARRAY(
           SELECT ctid FROM ${table} WHERE day < $1 LIMIT $2))`,
        [voidWindowStart(now, windowDays)],
        limit,
      );
    },
    async oldestRowAgeMs(pool, now) {
      const day = await oldestDay(pool);
      return day === null ? null : now.getTime() - Date.parse(`${day}T00:00:00Z`);
    },
    async behindMs(pool, now) {
      const day = await oldestDay(pool);
      return day === null ? null : now.getTime() - voidWindowExpiry(day, windowDays).getTime();
    },
  };
}

/** Every table of the ledger that grows with traffic, with its rule. */
export function ledgerRetentionRules(settings: LedgerRetentionSettings): RetentionRule[] {
  return [
    leadViewsRule(settings.leadViewKeepDays),
    voidWindowRule("lead_view_runners_up", settings.voidWindowDays),
    voidWindowRule("lead_view_voids", settings.voidWindowDays),
  ];
}

/** The ledger's retention, as the service runs it (settings in config.ts). */
export function createLedgerRetention(deps: {
  pool: Pool;
  config: {
    LEAD_VIEW_RETENTION_DAYS: number;
    LEAD_VIEW_VOID_WINDOW_DAYS: number;
    RETENTION_INTERVAL_MS: number;
    RETENTION_BATCH_SIZE: number;
  };
  metrics: Metrics;
  logger: Logger;
  now: () => Date;
}): Retention {
  return createRetention({
    pool: deps.pool,
    rules: ledgerRetentionRules({
      leadViewKeepDays: deps.config.LEAD_VIEW_RETENTION_DAYS,
      voidWindowDays: deps.config.LEAD_VIEW_VOID_WINDOW_DAYS,
    }),
    metrics: deps.metrics,
    logger: deps.logger,
    intervalMs: deps.config.RETENTION_INTERVAL_MS,
    batchSize: deps.config.RETENTION_BATCH_SIZE,
    now: deps.now,
  });
}
