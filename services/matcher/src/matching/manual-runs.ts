// Manual runs: `POST /v1/watchlists/{id}/run` evaluates the watchlist's current recipe version
// against the matcher's parcel projection, most recently observed parcels first, at most
// `parcelLimit` of them (after narrowing to the recipe's counties in SQL), and emits each match
// as `match.found` with trigger `manual_run`. The run is recorded first and answered 202; it
// then proceeds in pages of `pageSize` parcels, each page's matches, outbox records and the
// run's counters committed together, so GET of the run shows progress as it goes.
import { randomBytes } from "node:crypto";
import type { ManualRun } from "@th/api-schemas";
import type { ParcelIngested } from "@th/contracts";
import { inTransaction, type Pool } from "@th/db";
import { ApiError } from "@th/service-kit";
import type { Logger } from "@th/telemetry";
import {
  markRunFailed,
  markRunning,
  markRunSucceeded,
  type RunRow,
  readRun,
  readRunRecipe,
  recordPageProgress,
  recordRun,
  STALE_AFTER_MS,
} from "../db/manual-runs.ts";
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
  const recipe = await readRunRecipe(pool, run);
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
    await recordPageProgress(client, runId, scanned, inserted);
  });
}

export function createManualRuns(deps: {
  pool: Pool;
  logger: Logger;
  watchlists: WatchlistStore;
  parcelLimit: number;
  /** Runs one tenant may have queued or running at once, across all its watchlists. */
  maxRunsPerTenant: number;
  pageSize?: number;
  onCommitted: () => void;
  /** The clock a run and its matches are stamped with. */
  now?: () => Date;
}) {
  const { pool } = deps;
  const now = deps.now ?? (() => new Date());
  const pageSize = deps.pageSize ?? 1000;
  const inFlight = new Set<Promise<void>>();

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
      const matches = matchesOfPage({ ...run, name }, recipe, page.parcels, now().toISOString());
      scanned += page.parcels.length;
      after = page.last;
      await commitPage(pool, run.id, scanned, matches);
      if (matches.length > 0) {
        deps.onCommitted();
      }
    }
    await markRunSucceeded(pool, run.id, scanned);
  }

  /** Runs in the background; `settle` waits for every run started here. */
  function launch(run: RunRow, name: string): void {
    const task = execute(run, name)
      .catch(async (error: unknown) => {
        deps.logger.error({ err: error, run_id: run.id }, "manual run failed");
        await markRunFailed(pool, run.id, error);
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
        recordRun(
          client,
          {
            id: `run_${randomBytes(10).toString("hex")}`,
            tenant_id: tenantId,
            watchlist_id: watchlistId,
            recipe_version: current.version,
            parcel_limit: deps.parcelLimit,
            created_at: now(),
          },
          deps.maxRunsPerTenant,
        ),
      );
      launch(run, current.name);
      return toRun(run, Date.now());
    },

    async get(tenantId: string, watchlistId: string, runId: string): Promise<ManualRun> {
      const row = await readRun(pool, tenantId, watchlistId, runId);
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
