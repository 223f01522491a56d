// The matcher's internal API, called by the gateway as the authenticated caller (the identity
// headers of `internalCaller`). Every query is scoped to the caller's tenant: another tenant's
// watchlist, run or matches answer 404, exactly like one that does not exist.
import {
  manualRunSchema,
  matchPageQuerySchema,
  matchSummaryPageSchema,
  toRecipeIssues,
  watchlistCreateSchema,
  watchlistListSchema,
  watchlistSchema,
  watchlistUpdateSchema,
} from "@th/api-schemas";
import type { Pool } from "@th/db";
import { ApiError, errorResponses, type HttpApp, internalCaller } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import { listMatches } from "../db/matches.ts";
import type { WatchlistStore } from "../db/watchlists.ts";
import type { ManualRuns } from "../matching/manual-runs.ts";

const idParams = z.object({ id: z.string().min(1).max(64) });
const runParams = z.object({ id: z.string().min(1).max(64), run_id: z.string().min(1).max(64) });
const listQuery = z.object({
  cursor: z.string().min(1).max(256).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(50),
});

/** Re-validates a body with the shared schema and names each failing path (`body.recipe...`). */
export function invalidBody(schema: z.ZodType, body: unknown): ApiError | undefined {
  const parsed = schema.safeParse(body);
  if (parsed.success) {
    return undefined;
  }
  const fields = toRecipeIssues(parsed.error, "body");
  return new ApiError(
    "invalid_request",
    `invalid body: ${fields.map((field) => `${field.path} ${field.message}`).join("; ")}`,
    { fields },
  );
}

function checkBody(request: FastifyRequest & { validationError?: Error }, schema: z.ZodType) {
  if (request.validationError) {
    throw invalidBody(schema, request.body) ?? request.validationError;
  }
}

interface WatchlistRouteDeps {
  pool: Pool;
  watchlists: WatchlistStore;
  runs: ManualRuns;
}

export function registerWatchlistRoutes(app: HttpApp, deps: WatchlistRouteDeps): void {
  registerWatchlistCrud(app, deps.watchlists);
  registerRunRoutes(app, deps.runs);
  registerMatchRoutes(app, deps);
}

/** Creating, listing, reading, changing and deleting the caller's watchlists. */
function registerWatchlistCrud(app: HttpApp, store: WatchlistStore): void {
  app.post(
    "/internal/v1/watchlists",
    {
      attachValidation: true,
      schema: {
        body: watchlistCreateSchema,
        response: { 201: watchlistSchema, ...errorResponses("unauthorized", "conflict") },
      },
    },
    async (request, reply) => {
      checkBody(request, watchlistCreateSchema);
      const caller = internalCaller(request);
      const created = await store.create({
        tenantId: caller.tenantId,
        name: request.body.name,
        recipe: request.body.recipe,
      });
      return reply.status(201).send(created);
    },
  );

  app.get(
    "/internal/v1/watchlists",
    {
      schema: {
        querystring: listQuery,
        response: { 200: watchlistListSchema, ...errorResponses("unauthorized") },
      },
    },
    async (request) => store.list(internalCaller(request).tenantId, request.query),
  );

  app.get(
    "/internal/v1/watchlists/:id",
    {
      schema: {
        params: idParams,
        response: { 200: watchlistSchema, ...errorResponses("unauthorized", "not_found") },
      },
    },
    async (request) => store.get(internalCaller(request).tenantId, request.params.id),
  );

  app.patch(
    "/internal/v1/watchlists/:id",
    {
      attachValidation: true,
      schema: {
        params: idParams,
        body: watchlistUpdateSchema,
        response: { 200: watchlistSchema, ...errorResponses("unauthorized", "not_found") },
      },
    },
    async (request) => {
      checkBody(request, watchlistUpdateSchema);
      return store.update(internalCaller(request).tenantId, request.params.id, request.body);
    },
  );

  app.delete(
    "/internal/v1/watchlists/:id",
    {
      schema: {
        params: idParams,
        response: { 204: z.null(), ...errorResponses("unauthorized", "not_found") },
      },
    },
    async (request, reply) => {
      await store.remove(internalCaller(request).tenantId, request.params.id);
      return reply.status(204).send(null);
    },
  );
}

/** Manual runs: starting one and following its progress. */
function registerRunRoutes(app: HttpApp, runs: ManualRuns): void {
  app.post(
    "/internal/v1/watchlists/:id/runs",
    {
      schema: {
        params: idParams,
        response: {
          202: manualRunSchema,
          ...errorResponses("unauthorized", "not_found", "conflict"),
        },
      },
    },
    async (request, reply) => {
      const run = await runs.start(internalCaller(request).tenantId, request.params.id);
      return reply.status(202).send(run);
    },
  );

  app.get(
    "/internal/v1/watchlists/:id/runs/:run_id",
    {
      schema: {
        params: runParams,
        response: { 200: manualRunSchema, ...errorResponses("unauthorized", "not_found") },
      },
    },
    async (request) =>
      runs.get(internalCaller(request).tenantId, request.params.id, request.params.run_id),
  );
}

/** Polling a watchlist's matches. */
function registerMatchRoutes(app: HttpApp, deps: WatchlistRouteDeps): void {
  app.get(
    "/internal/v1/watchlists/:id/matches",
    {
      schema: {
        params: idParams,
        querystring: matchPageQuerySchema,
        response: { 200: matchSummaryPageSchema, ...errorResponses("unauthorized", "not_found") },
      },
    },
    async (request) => {
      // The watchlist must be the caller's and live; its matches are then read by id.
      await deps.watchlists.assertOwned(internalCaller(request).tenantId, request.params.id);
      return listMatches(deps.pool, request.params.id, request.query);
    },
  );
}
