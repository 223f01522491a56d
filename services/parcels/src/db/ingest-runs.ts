import type { Pool } from "@th/db";
// Not the package's index: it loads ioredis, whose String subclass slows every string built-in
// of the process (the roll ingest's parsing took twice the CPU).
import { deleteInBatches, type RetentionRule } from "@th/service-kit/retention";

/** What an ingest run counted, written to its `ingest_runs` row when it finishes. */
export interface IngestRunCounts {
  kind: string;
  /** When it finished, by the ingest's clock. */
  finishedAt: Date;
  read: number;
  new: number;
  changed: number;
  unchanged: number;
  rejected: number;
}

/**
 * Records that an ingest of `sourceFile` began at `startedAt` (the ingest's clock, which
 * retention ages the run by); its kind is known only once the header is read.
 */
export async function recordIngestStarted(
  pool: Pool,
  ingestId: string,
  sourceFile: string,
  startedAt: Date,
): Promise<void> {
  await pool.query(
    "INSERT INTO ingest_runs (ingest_id, source_file, kind, started_at) VALUES ($1, $2, $3, $4)",
    [ingestId, sourceFile, "pending", startedAt],
  );
}

export async function recordIngestFinished(
  pool: Pool,
  ingestId: string,
  counts: IngestRunCounts,
): Promise<void> {
  await pool.query(
    `UPDATE ingest_runs SET kind = $2, finished_at = $8, rows_read = $3, rows_new = $4,
            rows_changed = $5, rows_unchanged = $6, rows_rejected = $7
      WHERE ingest_id = $1`,
    [
      ingestId,
      counts.kind,
      counts.read,
      counts.new,
      counts.changed,
      counts.unchanged,
      counts.rejected,
      counts.finishedAt,
    ],
  );
}

/** The most recent ingest runs, newest first, with what each counted (unfinished runs too). */
export async function listIngestRuns(pool: Pool, limit: number) {
  const { rows } = await pool.query<{
    ingest_id: string;
    source_file: string;
    kind: string;
    started_at: Date;
    finished_at: Date | null;
    rows_read: string;
    rows_new: string;
    rows_changed: string;
    rows_unchanged: string;
    rows_rejected: string;
  }>(
    `SELECT ingest_id, source_file, kind, started_at, finished_at, rows_read, rows_new,
            rows_changed, rows_unchanged, rows_rejected
       FROM ingest_runs ORDER BY started_at DESC, ingest_id DESC LIMIT $1`,
    [limit],
  );
  return rows.map((row) => ({
    ingest_id: row.ingest_id,
    source_file: row.source_file,
    kind: row.kind,
    started_at: row.started_at.toISOString(),
    finished_at: row.finished_at?.toISOString() ?? null,
    rows_read: Number(row.rows_read),
    rows_new: Number(row.rows_new),
    rows_changed: Number(row.rows_changed),
    rows_unchanged: Number(row.rows_unchanged),
    rows_rejected: Number(row.rows_rejected),
  }));
}

/**
 * Ingest runs started before the horizon, oldest first, one batch a statement (decision 0394). A
 * run that never finished by then died with its process; it goes too.
 */
export function ingestRunsRule(keepMs: number): RetentionRule {
  return {
    table: "parcels.ingest_runs",
    keepMs,
    sweep: (pool: Pool, now: Date, limit: number) =>
      deleteInBatches(
        pool,
        `DELETE FROM ingest_runs WHERE ingest_id = ANY(ARRAY(
           SELECT ingest_id FROM ingest_runs WHERE started_at < $1 ORDER BY started_at LIMIT $2))`,
        [new Date(now.getTime() - keepMs)],
        limit,
      ),
    async oldestRowAgeMs(pool: Pool, now: Date) {
      const { rows } = await pool.query<{ at: Date | null }>(
        "SELECT min(started_at) AS at FROM ingest_runs",
      );
      const at = rows[0]?.at;
      return at ? Math.max(0, now.getTime() - at.getTime()) : null;
    },
  };
}
