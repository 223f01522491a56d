import type { Pool } from "@th/db";

/** Serializes rebuilds: two at once would truncate each other's shadow ledger. */
const REBUILD_LOCK = "hashtext('quota-ledger.rebuild')";

/**
 * Holds the rebuild's session-level advisory lock on a connection of its own while `work` runs,
 * and fails at once when another rebuild holds it.
 */
export async function withRebuildLock<T>(pool: Pool, work: () => Promise<T>): Promise<T> {
  const lock = await pool.connect();
  try {
    const { rows } = await lock.query<{ locked: boolean }>(
      `SELECT pg_try_advisory_lock(${REBUILD_LOCK}) AS locked`,
    );
    if (!rows[0]?.locked) {
      throw new Error("another ledger rebuild is running");
    }
    return await work();
  } finally {
    await lock.query(`SELECT pg_advisory_unlock(${REBUILD_LOCK})`).catch(() => {});
    lock.release();
  }
}
