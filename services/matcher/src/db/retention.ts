// What the matcher removes as it ages (decision 0394): matches once polling no longer needs them,
// manual runs once nobody looks them up. Each sweep removes one small batch; the kit repeats it.
import type { Pool } from "@th/db";
import type { RetentionRule } from "@th/service-kit";

/**
 * The head of the matches table in seq order (its unique index, so the batch never scans the
 * table), the expired ones among it removed, and each watchlist's retention mark raised to the
 * last polling position removed, in one statement: polling never sees the matches gone without
 * the mark that refuses the cursors before them. Seq is taken at insert, so the head is the
 * oldest; a match of a long transaction that sits behind a younger one waits for the next rounds.
 */
export const SWEEP_MATCHES_SQL = `
WITH removed AS (
  DELETE FROM matches WHERE ctid = ANY(ARRAY(
    SELECT h.ctid FROM (SELECT ctid, created_at FROM matches ORDER BY seq LIMIT $2) h
     WHERE h.created_at < $1))
  RETURNING watchlist_id, tx_id, seq
), newest AS (
  SELECT DISTINCT ON (watchlist_id) watchlist_id, tx_id, seq FROM removed
   ORDER BY watchlist_id, tx_id DESC, seq DESC
), marked AS (
  INSERT INTO match_retention_marks AS r (watchlist_id, removed_tx_id, removed_seq, marked_at)
  SELECT watchlist_id, tx_id, seq, $3 FROM newest
  ON CONFLICT (watchlist_id) DO UPDATE
     SET removed_tx_id = excluded.removed_tx_id, removed_seq = excluded.removed_seq,
         marked_at = excluded.marked_at
   WHERE (excluded.removed_tx_id, excluded.removed_seq) > (r.removed_tx_id, r.removed_seq)
)
SELECT count(*)::int AS removed FROM removed`;

export function matchesRule(keepMs: number): RetentionRule {
  return {
    table: "matcher.matches",
    keepMs,
    async sweep(pool: Pool, now: Date, limit: number) {
      const { rows } = await pool.query<{ removed: number }>(SWEEP_MATCHES_SQL, [
        new Date(now.getTime() - keepMs),
        limit,
        now,
      ]);
      return rows[0]?.removed ?? 0;
    },
    // The head in seq order, as the sweep reads it: min(created_at) would read the whole table.
    oldestRowAgeMs: (pool: Pool, now: Date) =>
      oldestAge(pool, now, "SELECT created_at AS at FROM matches ORDER BY seq LIMIT 1"),
  };
}

/**
 * Runs made before the horizon, oldest first. A run still queued or running is left alone unless
 * its worker stopped reporting before the horizon too (its process died long ago).
 */
const SWEEP_RUNS_SQL = `
DELETE FROM manual_runs WHERE ctid = ANY(ARRAY(
  SELECT ctid FROM manual_runs
   WHERE created_at < $1 AND (status NOT IN ('queued', 'running') OR heartbeat_at < $1)
   ORDER BY created_at LIMIT $2))`;

export function manualRunsRule(keepMs: number): RetentionRule {
  return {
    table: "matcher.manual_runs",
    keepMs,
    async sweep(pool: Pool, now: Date, limit: number) {
      const { rowCount } = await pool.query(SWEEP_RUNS_SQL, [
        new Date(now.getTime() - keepMs),
        limit,
      ]);
      return rowCount ?? 0;
    },
    oldestRowAgeMs: (pool: Pool, now: Date) =>
      oldestAge(pool, now, "SELECT min(created_at) AS at FROM manual_runs"),
  };
}

async function oldestAge(pool: Pool, now: Date, sql: string): Promise<number | null> {
  const { rows } = await pool.query<{ at: Date | null }>(sql);
  const at = rows[0]?.at;
  return at ? Math.max(0, now.getTime() - at.getTime()) : null;
}
