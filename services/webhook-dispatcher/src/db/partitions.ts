// deliveries and attempts are partitioned by month (migration 20270305000200, decision 0392):
// the coming months' partitions, and the indexes the first partition lacks.
import type { Pool } from "@th/db";
import { ensureMonthlyPartitions } from "@th/service-kit";
import { MONTHS_AHEAD } from "../domain/retention.ts";

export const DELIVERIES = "deliveries";
export const ATTEMPTS = "attempts";

/** A delivery row is rewritten after its insert; its pages keep room for that (migration 20261204). */
const DELIVERIES_FILLFACTOR = 50;

/** The partitions of deliveries that do not yet leave half of each page free. */
async function partitionsWithoutFillfactor(pool: Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass
        AND NOT coalesce(c.reloptions @> ARRAY['fillfactor=${DELIVERIES_FILLFACTOR}'], false)`,
    [DELIVERIES],
  );
  return rows.map((row) => row.name);
}

/**
 * Creates the partitions of the months from `now`'s to MONTHS_AHEAD after it that are missing,
 * for both tables; with nothing to create it takes no lock. A month the first partition (the
 * table as it was) covers is left to it.
 */
export async function ensureDeliveryMonths(pool: Pool, now: Date): Promise<void> {
  await ensureMonthlyPartitions(pool, DELIVERIES, now, MONTHS_AHEAD);
  await ensureMonthlyPartitions(pool, ATTEMPTS, now, MONTHS_AHEAD);
  for (const name of await partitionsWithoutFillfactor(pool)) {
    // Only pages written from now on follow it; a new partition has none yet.
    await pool.query(`ALTER TABLE "${name}" SET (fillfactor = ${DELIVERIES_FILLFACTOR})`);
  }
}

interface MissingIndex {
  parent_index: string;
  definition: string;
  partition: string;
}

/**
 * Indexes declared ON ONLY the partitioned table (so the migration did not build them on the
 * first partition under its lock) that a partition has no index for yet.
 */
async function missingIndexes(pool: Pool, parent: string): Promise<MissingIndex[]> {
  const { rows } = await pool.query<MissingIndex>(
    `SELECT pc.relname AS parent_index, pg_get_indexdef(pi.indexrelid) AS definition,
            c.relname AS partition
       FROM pg_index pi
       JOIN pg_class pc ON pc.oid = pi.indexrelid
       JOIN pg_inherits t ON t.inhparent = pi.indrelid
       JOIN pg_class c ON c.oid = t.inhrelid
      WHERE pi.indrelid = $1::regclass AND NOT pi.indisvalid
        AND NOT EXISTS (
          SELECT 1 FROM pg_inherits ii JOIN pg_index ci ON ci.indexrelid = ii.inhrelid
           WHERE ii.inhparent = pi.indexrelid AND ci.indrelid = c.oid)
      ORDER BY 1, 3`,
    [parent],
  );
  return rows;
}

/** `deliveries_pkey` of partition `deliveries_p202612`: `deliveries_pkey_p202612`. */
function childIndexName(parent: string, missing: MissingIndex): string {
  return `${missing.parent_index}_${missing.partition.slice(parent.length + 1)}`;
}

/**
 * Builds one missing index on its partition CONCURRENTLY (reads and writes go on) and attaches it
 * to the partitioned table's. A build that failed before left an invalid index of that name,
 * which is dropped and built again.
 */
async function buildChildIndex(pool: Pool, parent: string, missing: MissingIndex): Promise<void> {
  const child = childIndexName(parent, missing);
  const { rows } = await pool.query<{ valid: boolean }>(
    `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace`,
    [child],
  );
  if (rows[0] && !rows[0].valid) {
    await pool.query(`DROP INDEX CONCURRENTLY IF EXISTS "${child}"`);
  }
  const on = /ON ONLY (\S+) USING/.exec(missing.definition);
  if (!on) {
    throw new Error(`unexpected definition of ${missing.parent_index}: ${missing.definition}`);
  }
  const statement = missing.definition
    .replace(/^CREATE (UNIQUE )?INDEX \S+/, `CREATE $1INDEX CONCURRENTLY IF NOT EXISTS "${child}"`)
    .replace(on[0], `ON "${missing.partition}" USING`);
  await pool.query(statement);
  await pool.query(`ALTER INDEX "${missing.parent_index}" ATTACH PARTITION "${child}"`);
}

/**
 * Completes the partitioned indexes of `parent` on every partition that lacks them, one build at
 * a time, under a session lock so replicas do not build the same index twice. Answers how many
 * it built; none when another process holds the lock.
 */
export async function completePartitionIndexes(pool: Pool, parent: string): Promise<number> {
  const missing = await missingIndexes(pool, parent);
  if (missing.length === 0) {
    return 0;
  }
  const lock = await pool.connect();
  try {
    const { rows } = await lock.query<{ locked: boolean }>(
      "SELECT pg_try_advisory_lock(hashtext(current_schema() || '.partition-indexes'), hashtext($1)) AS locked",
      [parent],
    );
    if (!rows[0]?.locked) {
      return 0;
    }
    try {
      for (const index of await missingIndexes(pool, parent)) {
        await buildChildIndex(pool, parent, index);
      }
      return missing.length;
    } finally {
      await lock.query(
        "SELECT pg_advisory_unlock(hashtext(current_schema() || '.partition-indexes'), hashtext($1))",
        [parent],
      );
    }
  } finally {
    lock.release();
  }
}
