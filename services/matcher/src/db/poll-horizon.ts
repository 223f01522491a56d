import type { Pool } from "@th/db";
import type { SnapshotBounds } from "../domain/poll-horizon.ts";

/** The bounds of a fresh snapshot of the instance (see `PollHorizon`). */
export async function snapshotBounds(pool: Pool): Promise<SnapshotBounds> {
  const { rows } = await pool.query<SnapshotBounds>(
    `SELECT pg_snapshot_xmin(s)::text AS xmin, pg_snapshot_xmax(s)::text AS xmax
       FROM pg_current_snapshot() AS s`,
  );
  const bounds = rows[0];
  if (!bounds) {
    throw new Error("pg_current_snapshot() answered no row");
  }
  return bounds;
}
