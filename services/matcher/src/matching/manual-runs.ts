// Manual runs: `POST /v1/watchlists/{id}/run` evaluates the watchlist's current recipe version
// against the matcher's parcel projection, most recently observed parcels first, at most
// `parcelLimit` of them (after narrowing to the recipe's counties in SQL), and emits each match
// as `match.found` with trigger `manual_run`. The run is recorded first and answered 202; it
// then proceeds in pages of `pageSize` parcels, each page's matches, outbox records and the
// run's counters committed together, so GET of the run shows progress as it goes.
import { randomBytes } from "node:crypto";
import type { ManualRun } from "@th/api-schemas";
import { inTransaction, type Pool } from "@th/db";
import { ApiError } from "@th/service-kit";
import type { Logger } from "@th/telemetry";
import { insertMatches, type NewMatch } from "../db/matches.ts";
import { countProjection, readProjectionPage } from "../db/projection.ts";
import type { WatchlistStore } from "../db/watchlists.ts";
import { compileRecipe, evaluateRecipe } from "../domain/evaluate.ts";
import { buildMatchFound } from "../domain/match-event.ts";
import { compilePredicate, parcelFacts, UnjudgeableParcelError } from "../domain/predicate.ts";

/** A run whose worker has not reported for this long is shown as failed (its process died). */
const STALE_AFTER_MS = 60_000;

interface RunRow {
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

function toRun(row: RunRow, nowMs: number): ManualRun {
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

  async function execute(run: RunRow, name: string): Promise<void> {
    const { rows } = await pool.query<{ recipe: Parameters<typeof compileRecipe>[0] }>(
      "SELECT recipe FROM recipe_versions WHERE watchlist_id = $1 AND version = $2",
      [run.watchlist_id, run.recipe_version],
    );
    const recipe = rows[0]?.recipe;
    if (!recipe) {
      throw new Error(`recipe version ${run.recipe_version} not found`);
    }
    const compiled = compileRecipe(recipe);
    const predicate = compilePredicate(compiled);
    const counties = compiled.recipe.filters.counties;
    const total = await countProjection(pool, counties, run.parcel_limit);
    await pool.query(
      `UPDATE manual_runs SET status = 'running', started_at = now(), heartbeat_at = now(),
              parcels_total = $2 WHERE id = $1`,
      [run.id, total],
    );
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
      const occurredAt = new Date().toISOString();
      const matches: NewMatch[] = [];
      for (const parcel of page.parcels) {
        let facts: ReturnType<typeof parcelFacts>;
        try {
          facts = parcelFacts(parcel);
        } catch (error) {
          if (error instanceof UnjudgeableParcelError) {
            continue;
          }
          throw error;
        }
        if (!predicate(facts)) {
          continue;
        }
        const evaluation = evaluateRecipe(compiled, parcel);
        if (!evaluation.matched) {
          continue;
        }
        matches.push({
          runId: run.id,
          event: buildMatchFound({
            tenantId: run.tenant_id,
            watchlist: { id: run.watchlist_id, name },
            recipeVersion: run.recipe_version,
            parcel,
            evaluation,
            trigger: "manual_run",
            runId: run.id,
            occurredAt,
          }),
        });
      }
      scanned += page.parcels.length;
      after = page.last;
      await inTransaction(pool, async (client) => {
        const inserted = await insertMatches(client, matches);
        await client.query(
          `UPDATE manual_runs SET parcels_scanned = $2, matches_found = matches_found + $3,
                  heartbeat_at = now() WHERE id = $1`,
          [run.id, scanned, inserted],
        );
      });
      if (matches.length > 0) {
        deps.onCommitted();
      }
    }
    await pool.query(
      `UPDATE manual_runs SET status = 'succeeded', finished_at = now(), heartbeat_at = now(),
              parcels_total = $2 WHERE id = $1`,
      [run.id, scanned],
    );
  }

  return {
    parcelLimit: deps.parcelLimit,

    /** Records a run of the current recipe version and starts it in the background. */
    async start(tenantId: string, watchlistId: string): Promise<ManualRun> {
      const current = await deps.watchlists.currentVersion(tenantId, watchlistId);
      const id = `run_${randomBytes(10).toString("hex")}`;
      const run = await inTransaction(pool, async (client) => {
        // One run at a time per watchlist: a second would only repeat the first's deliveries.
        await client.query("SELECT pg_advisory_xact_lock(hashtext('run:' || $1))", [watchlistId]);
        const active = await client.query<{ id: string }>(
          `SELECT id FROM manual_runs WHERE watchlist_id = $1 AND status IN ('queued', 'running')
              AND heartbeat_at > now() - make_interval(secs => $2)`,
          [watchlistId, STALE_AFTER_MS / 1000],
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
          [id, tenantId, watchlistId, current.version, deps.parcelLimit],
        );
        return rows[0] as RunRow;
      });
      const task = execute(run, current.name)
        .catch(async (error: unknown) => {
          deps.logger.error({ err: error, run_id: id }, "manual run failed");
          await pool
            .query(
              `UPDATE manual_runs SET status = 'failed', error = $2, finished_at = now()
                WHERE id = $1`,
              [id, (error as Error).message.slice(0, 500)],
            )
            .catch(() => {});
        })
        .finally(() => {
          inFlight.delete(task);
        });
      inFlight.add(task);
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
