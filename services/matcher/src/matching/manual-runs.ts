// Manual runs: `POST /v1/watchlists/{id}/run` evaluates the watchlist's current recipe version
// against the matcher's parcel projection, most recently observed parcels first, at most
// `parcelLimit` of them (after narrowing to the recipe's counties in SQL), and emits each match
// as `match.found` with trigger `manual_run`. The run is recorded first and answered 202; it
// then proceeds in pages of `pageSize` parcels, each page's matches, outbox records and the
// run's counters committed together, so GET of the run shows progress as it goes.
import { randomBytes } from "node:crypto";
import type { ManualRun } from "@th/api-schemas";
import type { ParcelIngested } from "@th/contracts";
import { inTransaction, type Pool, type PoolClient } from "@th/db";
import { ApiError } from "@th/service-kit";
import type { Logger } from "@th/telemetry";
import { insertMatches, type NewMatch } from "../db/matches.ts";
import { countProjection, readProjectionPage } from "../db/projection.ts";
import type { WatchlistStore } from "../db/watchlists.ts";
import {
  type CompiledRecipe,
  compileRecipe,
  evaluateRecipe,
  type RecipeEvaluation,
} from "../domain/evaluate.ts";
import { buildMatchFound } from "../domain/match-event.ts";
import {
  compilePredicate,
  type Predicate,
  parcelFacts,
  UnjudgeableParcelError,
} from "../domain/predicate.ts";

/** A run whose worker has not reported for this long is shown as failed (its process died). */
const STALE_AFTER_MS = 60_000;

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

/** A run as the API shows it; a queued or running run whose worker went quiet shows as failed. */
export function toRun(row: RunRow, nowMs: number): ManualRun {
  const stale =
    (row.status === "queued" || row.status === "running") &&
    nowMs - row.heartbeat_at.getTime() > STALE_AFTER_MS;
  return {
    id: row.id,
    watchlist_id: row.watchlist_id,
    recipe_version: row.recipe_version,
    status: stale ? "failed" : row.status,
    parcel_limit: row.parcel_limit,
    parcels_total: row.parcels_total,
    parcels_scanned: row.parcels_scanned,
    matches_found: row.matches_found,
    error: stale ? "interrupted: the matcher instance running it stopped" : row.error,
    created_at: row.created_at.toISOString(),
    started_at: row.started_at?.toISOString() ?? null,
    finished_at: row.finished_at?.toISOString() ?? null,
  };
}

/** The recipe version a run evaluates, compiled once for the whole run. */
export interface RunRecipe {
  compiled: CompiledRecipe;
  predicate: Predicate;
}

/** Who a run's matches go to: the run, its tenant, watchlist and recipe version. */
export type RunTarget = Pick<RunRow, "id" | "tenant_id" | "watchlist_id" | "recipe_version"> & {
  name: string;
};

/** The evaluation of a parcel the recipe matches, or null; unjudgeable parcels are skipped. */
function evaluateForRun(recipe: RunRecipe, parcel: ParcelIngested): RecipeEvaluation | null {
  let facts: ReturnType<typeof parcelFacts>;
  try {
    facts = parcelFacts(parcel);
  } catch (error) {
    if (error instanceof UnjudgeableParcelError) {
      return null;
    }
    throw error;
  }
  if (!recipe.predicate(facts)) {
    return null;
  }
  const evaluation = evaluateRecipe(recipe.compiled, parcel);
  return evaluation.matched ? evaluation : null;
}

/** The `match.found` events, with trigger `manual_run`, of one page of parcels. */
export function matchesOfPage(
  run: RunTarget,
  recipe: RunRecipe,
  parcels: readonly ParcelIngested[],
  occurredAt: string,
): NewMatch[] {
  const matches: NewMatch[] = [];
  for (const parcel of parcels) {
    const evaluation = evaluateForRun(recipe, parcel);
    if (!evaluation) {
      continue;
    }
    matches.push({
      runId: run.id,
      event: buildMatchFound({
        tenantId: run.tenant_id,
        watchlist: { id: run.watchlist_id, name: run.name },
        recipeVersion: run.recipe_version,
        parcel,
        evaluation,
        trigger: "manual_run",
        runId: run.id,
        occurredAt,
      }),
    });
  }
  return matches;
}

async function loadRunRecipe(pool: Pool, run: RunRow): Promise<RunRecipe> {
  const { rows } = await pool.query<{ recipe: Parameters<typeof compileRecipe>[0] }>(
    "SELECT recipe FROM recipe_versions WHERE watchlist_id = $1 AND version = $2",
    [run.watchlist_id, run.recipe_version],
  );
  const recipe = rows[0]?.recipe;
  if (!recipe) {
    throw new Error(`recipe version ${run.recipe_version} not found`);
  }
  const compiled = compileRecipe(recipe);
  return { compiled, predicate: compilePredicate(compiled) };
}

/** Commits one page: its matches (and their outbox records) with the run's counters. */
async function commitPage(
  pool: Pool,
  runId: string,
  scanned: number,
  matches: NewMatch[],
): Promise<void> {
  await inTransaction(pool, async (client) => {
    const inserted = await insertMatches(client, matches);
    await client.query(
      `UPDATE manual_runs SET parcels_scanned = $2, matches_found = matches_found + $3,
              heartbeat_at = now() WHERE id = $1`,
      [runId, scanned, inserted],
    );
  });
}

async function markRunning(pool: Pool, runId: string, total: number): Promise<void> {
  await pool.query(
    `UPDATE manual_runs SET status = 'running', started_at = now(), heartbeat_at = now(),
            parcels_total = $2 WHERE id = $1`,
    [runId, total],
  );
}

async function markSucceeded(pool: Pool, runId: string, scanned: number): Promise<void> {
  await pool.query(
    `UPDATE manual_runs SET status = 'succeeded', finished_at = now(), heartbeat_at = now(),
            parcels_total = $2 WHERE id = $1`,
    [runId, scanned],
  );
}

/** Records why a run failed; a failure to record it is left to the staleness rule. */
async function markFailed(pool: Pool, runId: string, error: unknown): Promise<void> {
  await pool
    .query(
      `UPDATE manual_runs SET status = 'failed', error = $2, finished_at = now()
        WHERE id = $1`,
      [runId, (error as Error).message.slice(0, 500)],
    )
    .catch(() => {});
}

/** Records a queued run unless another run of the watchlist is still alive. */
async function recordRun(
  client: PoolClient,
  run: Pick<RunRow, "id" | "tenant_id" | "watchlist_id" | "recipe_version" | "parcel_limit">,
): Promise<RunRow> {
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
    `INSERT INTO manual_runs (id, tenant_id, watchlist_id, recipe_version, status, parcel_limit)
     VALUES ($1, $2, $3, $4, 'queued', $5) RETURNING *`,
    [run.id, run.tenant_id, run.watchlist_id, run.recipe_version, run.parcel_limit],
  );
  return rows[0] as RunRow;
}

export function createManualRuns(deps: {
  pool: Pool;
  logger: Logger;
  watchlists: WatchlistStore;
  parcelLimit: number;
  pageSize?: number;
  onCommitted: () => void;
}) {
  const { pool } = deps;
  const pageSize = deps.pageSize ?? 1000;
  const inFlight = new Set<Promise<void>>();

  async function loadRow(tenantId: string, watchlistId: string, runId: string) {
    const { rows } = await pool.query<RunRow>(
      "SELECT * FROM manual_runs WHERE id = $1 AND tenant_id = $2 AND watchlist_id = $3",
      [runId, tenantId, watchlistId],
    );
    return rows[0];
  }

  /** Scans the projection page by page, newest parcels first, committing as it goes. */
  async function execute(run: RunRow, name: string): Promise<void> {
    const recipe = await loadRunRecipe(pool, run);
    const counties = recipe.compiled.recipe.filters.counties;
    const total = await countProjection(pool, counties, run.parcel_limit);
    await markRunning(pool, run.id, total);
    let scanned = 0;
    let after: { observedAt: string; folio: string } | null = null;
    while (scanned < total) {
      const page = await readProjectionPage(pool, {
        counties,
        after,
        limit: Math.min(pageSize, total - scanned),
      });
      if (page.parcels.length === 0) {
        break;
      }
      const matches = matchesOfPage(
        { ...run, name },
        recipe,
        page.parcels,
        new Date().toISOString(),
      );
      scanned += page.parcels.length;
      after = page.last;
      await commitPage(pool, run.id, scanned, matches);
      if (matches.length > 0) {
        deps.onCommitted();
      }
    }
    await markSucceeded(pool, run.id, scanned);
  }

  /** Runs in the background; `settle` waits for every run started here. */
  function launch(run: RunRow, name: string): void {
    const task = execute(run, name)
      .catch(async (error: unknown) => {
        deps.logger.error({ err: error, run_id: run.id }, "manual run failed");
        await markFailed(pool, run.id, error);
      })
      .finally(() => {
        inFlight.delete(task);
      });
    inFlight.add(task);
  }

  return {
    parcelLimit: deps.parcelLimit,

    /** Records a run of the current recipe version and starts it in the background. */
    async start(tenantId: string, watchlistId: string): Promise<ManualRun> {
      const current = await deps.watchlists.currentVersion(tenantId, watchlistId);
      const run = await inTransaction(pool, (client) =>
        recordRun(client, {
          id: `run_${randomBytes(10).toString("hex")}`,
          tenant_id: tenantId,
          watchlist_id: watchlistId,
          recipe_version: current.version,
          parcel_limit: deps.parcelLimit,
        }),
      );
      launch(run, current.name);
      return toRun(run, Date.now());
    },

    async get(tenantId: string, watchlistId: string, runId: string): Promise<ManualRun> {
      const row = await loadRow(tenantId, watchlistId, runId);
      if (!row) {
        throw new ApiError("not_found", `no run ${runId} of watchlist ${watchlistId}`);
      }
      return toRun(row, Date.now());
    },

    /** Waits for runs in flight (used on stop and by tests). */
    async settle(): Promise<void> {
      await Promise.all([...inFlight]);
    },
  };
}

export type ManualRuns = ReturnType<typeof createManualRuns>;
