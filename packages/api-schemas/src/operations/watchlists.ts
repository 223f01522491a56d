import { z } from "zod";
import {
  manualRunSchema,
  matchPageQuerySchema,
  matchSummaryPageSchema,
  watchlistCreateSchema,
  watchlistListSchema,
  watchlistSchema,
  watchlistUpdateSchema,
} from "../watchlist.ts";
import { defineOperation } from "./operation.ts";

// Watchlists: CRUD, manual runs and free match polling, owned by the matcher. The paid polling
// call (`GET /v1/leads?watchlist_id=`) lives with the other lead reads.

const watchlists = { owner: "matcher", tags: ["watchlists"], surface: "rest" } as const;
const idParams = z.object({ id: z.string().min(1).max(64) });
// Every watchlist operation can be refused at the edge or find the matcher unavailable.
const edgeErrors = ["unauthorized", "rate_limited", "unavailable"] as const;

export const createWatchlist = defineOperation({
  ...watchlists,
  operationId: "createWatchlist",
  method: "POST",
  path: "/v1/watchlists",
  internalPath: "/internal/v1/watchlists",
  summary: "Create a watchlist; its recipe is matched against every parcel ingested from now on",
  body: watchlistCreateSchema,
  responses: { 201: watchlistSchema },
  errors: [...edgeErrors, "conflict"],
});

export const listWatchlists = defineOperation({
  ...watchlists,
  operationId: "listWatchlists",
  method: "GET",
  path: "/v1/watchlists",
  internalPath: "/internal/v1/watchlists",
  summary: "The tenant's watchlists, oldest first, with their activity",
  querystring: z.object({
    cursor: z.string().min(1).max(256).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(50),
  }),
  responses: { 200: watchlistListSchema },
  errors: edgeErrors,
});

export const getWatchlist = defineOperation({
  ...watchlists,
  operationId: "getWatchlist",
  method: "GET",
  path: "/v1/watchlists/:id",
  internalPath: "/internal/v1/watchlists/:id",
  params: idParams,
  responses: { 200: watchlistSchema },
  errors: [...edgeErrors, "not_found"],
});

export const updateWatchlist = defineOperation({
  ...watchlists,
  operationId: "updateWatchlist",
  method: "PATCH",
  path: "/v1/watchlists/:id",
  internalPath: "/internal/v1/watchlists/:id",
  summary:
    "Rename a watchlist or change its recipe; a changed recipe is a new version applied to parcels ingested from now on",
  params: idParams,
  body: watchlistUpdateSchema,
  responses: { 200: watchlistSchema },
  errors: [...edgeErrors, "not_found"],
});

export const deleteWatchlist = defineOperation({
  ...watchlists,
  operationId: "deleteWatchlist",
  method: "DELETE",
  path: "/v1/watchlists/:id",
  internalPath: "/internal/v1/watchlists/:id",
  params: idParams,
  responses: { 204: z.null().describe("No content") },
  errors: [...edgeErrors, "not_found"],
});

export const runWatchlist = defineOperation({
  ...watchlists,
  operationId: "runWatchlist",
  method: "POST",
  path: "/v1/watchlists/:id/run",
  internalPath: "/internal/v1/watchlists/:id/runs",
  summary:
    "Evaluate the current recipe against the most recent parcels of the store now; matches are emitted marked manual_run (202, then poll the run)",
  params: idParams,
  responses: { 202: manualRunSchema },
  errors: [...edgeErrors, "not_found", "conflict"],
});

export const getWatchlistRun = defineOperation({
  ...watchlists,
  operationId: "getWatchlistRun",
  method: "GET",
  path: "/v1/watchlists/:id/runs/:run_id",
  internalPath: "/internal/v1/watchlists/:id/runs/:run_id",
  summary: "A manual run's status, progress and counts",
  params: z.object({
    id: z.string().min(1).max(64),
    run_id: z.string().min(1).max(64),
  }),
  responses: { 200: manualRunSchema },
  errors: [...edgeErrors, "not_found"],
});

export const pollWatchlistMatches = defineOperation({
  ...watchlists,
  operationId: "pollWatchlistMatches",
  method: "GET",
  path: "/v1/watchlists/:id/matches",
  internalPath: "/internal/v1/watchlists/:id/matches",
  summary:
    "Free polling: the watchlist's matches since the cursor as summaries (folio, score, signals_fired, observed_at), oldest first; no parcel details, no lead-views, works with the quota exhausted",
  params: idParams,
  querystring: matchPageQuerySchema,
  responses: { 200: matchSummaryPageSchema },
  // A cursor from before the matches kept (decision 0394).
  errors: [...edgeErrors, "not_found", "cursor_expired"],
});

/** The watchlist operations, in the order the gateway registers them. */
export const watchlistOperations = [
  createWatchlist,
  listWatchlists,
  getWatchlist,
  updateWatchlist,
  deleteWatchlist,
  runWatchlist,
  getWatchlistRun,
  pollWatchlistMatches,
] as const;
