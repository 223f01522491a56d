// The tables that grow with traffic, as the soak bench measures them: rows and bytes (indexes and
// TOAST included, a partitioned table's partitions summed), and the vacuum autovacuum would run.
import type { Pool } from "@th/db";

export interface SoakTable {
  /** `schema.table`, as the retention metrics name it. */
  name: string;
  /** How long its rows are kept, for the summary. */
  kept: string;
  /** Days after which its size should stop growing (the horizon and the wait for it). */
  levelsAfterDays: number | null;
}

export const SOAK_TABLES: readonly SoakTable[] = [
  { name: "dispatcher.deliveries", kept: "30-day hold, dropped by month", levelsAfterDays: 62 },
  { name: "dispatcher.attempts", kept: "with their deliveries' months", levelsAfterDays: 62 },
  { name: "quota_ledger.lead_views", kept: "400 days, dropped by month", levelsAfterDays: 431 },
  { name: "quota_ledger.lead_view_runners_up", kept: "7-day void window + 1", levelsAfterDays: 8 },
  { name: "quota_ledger.lead_view_voids", kept: "7-day void window + 1", levelsAfterDays: 8 },
  { name: "quota_ledger.period_usage", kept: "for ever (billing counters)", levelsAfterDays: null },
  { name: "matcher.matches", kept: "90 days", levelsAfterDays: 90 },
  { name: "matcher.manual_runs", kept: "90 days", levelsAfterDays: 90 },
  { name: "matcher.match_retention_marks", kept: "one per watchlist", levelsAfterDays: 91 },
  { name: "parcels.ingest_runs", kept: "90 days", levelsAfterDays: 90 },
  { name: "keys.dashboard_sessions", kept: "a day past expiry", levelsAfterDays: 9 },
  { name: "keys.dashboard_refresh_tokens", kept: "with their sessions", levelsAfterDays: 9 },
  { name: "keys.password_tokens", kept: "a day past expiry", levelsAfterDays: 9 },
];

export interface TableSize {
  rows: number;
  bytes: number;
}

/** Rows and bytes of every soak table, read with one connection of the stack's database. */
export async function measureTables(pool: Pool): Promise<Map<string, TableSize>> {
  const sizes = new Map<string, TableSize>();
  for (const { name } of SOAK_TABLES) {
    const { rows } = await pool.query<{ rows: string; bytes: string }>(
      `SELECT (SELECT count(*) FROM ${name}) AS rows,
              coalesce((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree($1::regclass)),
                       pg_total_relation_size($1::regclass)) AS bytes`,
      [name],
    );
    sizes.set(name, { rows: Number(rows[0]?.rows ?? 0), bytes: Number(rows[0]?.bytes ?? 0) });
  }
  return sizes;
}

interface Thresholds {
  vacuumBase: number;
  vacuumScale: number;
  analyzeBase: number;
  analyzeScale: number;
}

async function thresholds(pool: Pool): Promise<Thresholds> {
  const { rows } = await pool.query<Record<keyof Thresholds, string>>(
    `SELECT current_setting('autovacuum_vacuum_threshold') AS "vacuumBase",
            current_setting('autovacuum_vacuum_scale_factor') AS "vacuumScale",
            current_setting('autovacuum_analyze_threshold') AS "analyzeBase",
            current_setting('autovacuum_analyze_scale_factor') AS "analyzeScale"`,
  );
  const row = rows[0];
  return {
    vacuumBase: Number(row?.vacuumBase),
    vacuumScale: Number(row?.vacuumScale),
    analyzeBase: Number(row?.analyzeBase),
    analyzeScale: Number(row?.analyzeScale),
  };
}

/**
 * What autovacuum would have done by now: VACUUM each table (or partition) of the soak whose dead
 * rows passed its threshold (50 + 20 % of its rows by default), ANALYZE each whose changes passed
 * analyze's. A simulated day lasts under a second here, where autovacuum looks at a table every
 * minute or so; without this the space deleted rows leave would wait for real minutes to be
 * reused, and the sizes would show the bench's speed, not retention's. Answers how many it
 * vacuumed.
 */
export async function autovacuum(pool: Pool): Promise<number> {
  const t = await thresholds(pool);
  const names = SOAK_TABLES.map((table) => table.name);
  const { rows } = await pool.query<{ relation: string; vacuum: boolean; analyze: boolean }>(
    `WITH soak AS (
       -- A partitioned table's partitions; a plain table has no partition tree, itself instead.
       SELECT coalesce(p.relid, n.name::regclass) AS relid FROM unnest($1::text[]) AS n(name)
         LEFT JOIN LATERAL pg_partition_tree(n.name::regclass) AS p ON true
        WHERE p.relid IS NULL OR p.isleaf)
     SELECT format('%I.%I', s.schemaname, s.relname) AS relation,
            s.n_dead_tup > $2 + $3 * greatest(c.reltuples, 0) AS vacuum,
            s.n_mod_since_analyze > $4 + $5 * greatest(c.reltuples, 0) AS analyze
       FROM soak JOIN pg_stat_user_tables s ON s.relid = soak.relid
       JOIN pg_class c ON c.oid = soak.relid`,
    [names, t.vacuumBase, t.vacuumScale, t.analyzeBase, t.analyzeScale],
  );
  let vacuumed = 0;
  for (const row of rows) {
    if (row.vacuum || row.analyze) {
      const what = [row.vacuum ? "VACUUM" : "", row.analyze ? "ANALYZE" : ""].filter(Boolean);
      await pool.query(`${what.length === 2 ? "VACUUM (ANALYZE)" : what[0]} ${row.relation}`);
      vacuumed += row.vacuum ? 1 : 0;
    }
  }
  return vacuumed;
}
