// The manual_runs rows: a run is recorded queued, marked running with its parcel total, advanced
// page by page in the page's transaction, and marked succeeded or failed.
import type { ManualRun, Recipe } from "@th/api-schemas";
import type { Pool, PoolClient } from "@th/db";
import { ApiError } from "@th/service-kit";

/** A run whose worker has not reported for this long is shown as failed (its process died). */
export const STALE_AFTER_MS = 60_000;

export interface RunRow {
  id: string;
  tenant_id: string;
  watchlist_id: string;
  recipe_version: number;
  status: ManualRun["status"];
  parcel_limit: number;
  parcels_total: number | null;
  parcels_scanned: number;
  matches_found: number;
  error: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  heartbeat_at: Date;
}

/** The recipe of the version a run evaluates, as stored; undefined when the version is gone. */
export async function readRunRecipe(
  pool: Pool,
  run: Pick<RunRow, "watchlist_id" | "recipe_version">,
): Promise<Recipe | undefined> {
  const { rows } = await pool.query<{ recipe: Recipe }>(
    "SELECT recipe FROM recipe_versions WHERE watchlist_id = $1 AND version = $2",
    [run.watchlist_id, run.recipe_version],
  );
  return rows[0]?.recipe;
}

export async function readRun(
  pool: Pool,
  tenantId: string,
  watchlistId: string,
  runId: string,
): Promise<RunRow | undefined> {
  const { rows } = await pool.query<RunRow>(
    "SELECT * FROM manual_runs WHERE id = $1 AND tenant_id = $2 AND watchlist_id = $3",
    [runId, tenantId, watchlistId],
  );
  return rows[0];
}

/** Advances a run's counters in the transaction that commits the page's matches. */
export async function recordPageProgress(
  client: PoolClient,
  runId: string,
  scanned: number,
  inserted: number,
): Promise<void> {
  await client.query(
    `UPDATE manual_runs SET parcels_scanned = $2, matches_found = matches_found + $3,
            heartbeat_at = now() WHERE id = $1`,
    [runId, scanned, inserted],
  );
}

export async function markRunning(pool: Pool, runId: string, total: number): Promise<void> {
  await pool.query(
    `UPDATE manual_runs SET status = 'running', started_at = now(), heartbeat_at = now(),
            parcels_total = $2 WHERE id = $1`,
    [runId, total],
  );
}

export async function markRunSucceeded(pool: Pool, runId: string, scanned: number): Promise<void> {
  await pool.query(
    `UPDATE manual_runs SET status = 'succeeded', finished_at = now(), heartbeat_at = now(),
            parcels_total = $2 WHERE id = $1`,
    [runId, scanned],
  );
}

/** Records why a run failed; a failure to record it is left to the staleness rule. */
export async function markRunFailed(pool: Pool, runId: string, error: unknown): Promise<void> {
  await pool
    .query(
      `UPDATE manual_runs SET status = 'failed', error = $2, finished_at = now()
        WHERE id = $1`,
      [runId, (error as Error).message.slice(0, 500)],
    )
    .catch(() => {});
}

/** Rejects a run when the tenant already has `maxPerTenant` runs alive; holds the tenant's lock. */
async function assertTenantRunSlot(
  client: PoolClient,
  tenantId: string,
  maxPerTenant: number,
): Promise<void> {
  // The tenant's lock serialises its starts, so a burst cannot all count the same free slots.
  await client.query("SELECT pg_advisory_xact_lock(hashtext('runs-tenant:' || $1))", [tenantId]);
  const { rows } = await client.query<{ live: number }>(
    `SELECT count(*)::int AS live FROM manual_runs
      WHERE tenant_id = $1 AND status IN ('queued', 'running')
        AND heartbeat_at > now() - make_interval(secs => $2)`,
    [tenantId, STALE_AFTER_MS / 1000],
  );
  if ((rows[0]?.live ?? 0) >= maxPerTenant) {
    throw new ApiError(
      "conflict",
      `this account already has ${maxPerTenant} manual runs in progress; wait for one to finish`,
    );
  }
}

/**
 * Records a queued run unless another run of the watchlist is still alive or the tenant has
 * `maxPerTenant` runs alive.
 */
export async function recordRun(
  client: PoolClient,
  run: Pick<
    RunRow,
    "id" | "tenant_id" | "watchlist_id" | "recipe_version" | "parcel_limit" | "created_at"
  >,
  maxPerTenant: number,
): Promise<RunRow> {
  // The tenant's lock comes first, then the watchlist's, so two starts never wait on each other
  // in opposite orders.
  await assertTenantRunSlot(client, run.tenant_id, maxPerTenant);
  // One run at a time per watchlist: a second would only repeat the first's deliveries.
  await client.query("SELECT pg_advisory_xact_lock(hashtext('run:' || $1))", [run.watchlist_id]);
  const active = await client.query<{ id: string }>(
    `SELECT id FROM manual_runs WHERE watchlist_id = $1 AND status IN ('queued', 'running')
        AND heartbeat_at > now() - make_interval(secs => $2)`,
    [run.watchlist_id, STALE_AFTER_MS / 1000],
  );
  if (active.rows[0]) {
    throw new ApiError(
      "conflict",
      `run ${active.rows[0].id} of this watchlist is still running; wait for it to finish`,
    );
  }
  const { rows } = await client.query<RunRow>(
    `INSERT INTO manual_runs (id, tenant_id, watchlist_id, recipe_version, status, parcel_limit,
                              created_at)
     VALUES ($1, $2, $3, $4, 'queued', $5, $6) RETURNING *`,
    [run.id, run.tenant_id, run.watchlist_id, run.recipe_version, run.parcel_limit, run.created_at],
  );
  return rows[0] as RunRow;
}
