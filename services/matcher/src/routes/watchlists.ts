// The matcher's internal API, called by the gateway as the authenticated caller (the identity
// headers of `internalCaller`). Every query is scoped to the caller's tenant: another tenant's
// watchlist, run or matches answer 404, exactly like one that does not exist.
import {
  bodyIssues,
  createWatchlist,
  deleteWatchlist,
  exportWatchlistMatchesCsv,
  getWatchlist,
  getWatchlistRun,
  listWatchlists,
  pollWatchlistMatches,
  requestSchemas,
  runWatchlist,
  updateWatchlist,
} from "@th/api-schemas";
import type { Pool } from "@th/db";
import { ApiError, errorResponses, type HttpApp, internalCaller } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import { exportFolios, listMatches, type MatchRetention } from "../db/matches.ts";
import type { WatchlistStore } from "../db/watchlists.ts";
import type { ManualRuns } from "../matching/manual-runs.ts";

/** Re-validates a body with the shared schema and names each failing path (`body.recipe...`). */
function invalidBody(schema: z.ZodType, body: unknown): ApiError | undefined {
  const issues = bodyIssues(schema, body);
  return issues && new ApiError("invalid_request", issues.message, { fields: issues.fields });
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
  /** How long matches are kept: a cursor from before them is refused, saying so. */
  matchRetention: MatchRetention;
}

/**
 * Each route binds to its public operation in the operation table (`@th/api-schemas`): its
 * internal path, request schemas and successful answers.
 */
export function registerWatchlistRoutes(app: HttpApp, deps: WatchlistRouteDeps): void {
  registerWatchlistCrud(app, deps.watchlists);
  registerRunRoutes(app, deps.runs);
  registerMatchRoutes(app, deps);
}

/** Creating, listing, reading, changing and deleting the caller's watchlists. */
function registerWatchlistCrud(app: HttpApp, store: WatchlistStore): void {
  app.post(
    createWatchlist.internalPath,
    {
      attachValidation: true,
      schema: {
        ...requestSchemas(createWatchlist),
        response: { ...createWatchlist.responses, ...errorResponses("unauthorized", "conflict") },
      },
    },
    async (request, reply) => {
      checkBody(request, createWatchlist.body);
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
    listWatchlists.internalPath,
    {
      schema: {
        ...requestSchemas(listWatchlists),
        response: { ...listWatchlists.responses, ...errorResponses("unauthorized") },
      },
    },
    async (request) => store.list(internalCaller(request).tenantId, request.query),
  );

  app.get(
    getWatchlist.internalPath,
    {
      schema: {
        ...requestSchemas(getWatchlist),
        response: { ...getWatchlist.responses, ...errorResponses("unauthorized", "not_found") },
      },
    },
    async (request) => store.get(internalCaller(request).tenantId, request.params.id),
  );

  app.patch(
    updateWatchlist.internalPath,
    {
      attachValidation: true,
      schema: {
        ...requestSchemas(updateWatchlist),
        response: { ...updateWatchlist.responses, ...errorResponses("unauthorized", "not_found") },
      },
    },
    async (request) => {
      checkBody(request, updateWatchlist.body);
      return store.update(internalCaller(request).tenantId, request.params.id, request.body);
    },
  );

  app.delete(
    deleteWatchlist.internalPath,
    {
      schema: {
        ...requestSchemas(deleteWatchlist),
        response: { ...deleteWatchlist.responses, ...errorResponses("unauthorized", "not_found") },
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
    runWatchlist.internalPath,
    {
      schema: {
        ...requestSchemas(runWatchlist),
        response: {
          ...runWatchlist.responses,
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
    getWatchlistRun.internalPath,
    {
      schema: {
        ...requestSchemas(getWatchlistRun),
        response: { ...getWatchlistRun.responses, ...errorResponses("unauthorized", "not_found") },
      },
    },
    async (request) =>
      runs.get(internalCaller(request).tenantId, request.params.id, request.params.run_id),
  );
}

/** Polling a watchlist's matches. */
function registerMatchRoutes(app: HttpApp, deps: WatchlistRouteDeps): void {
  app.get(
    pollWatchlistMatches.internalPath,
    {
      schema: {
        ...requestSchemas(pollWatchlistMatches),
        response: {
          ...pollWatchlistMatches.responses,
          ...errorResponses("unauthorized", "not_found", "cursor_expired"),
        },
      },
    },
    async (request) => {
      // The watchlist must be the caller's and live; its matches are then read by id.
      await deps.watchlists.assertOwned(internalCaller(request).tenantId, request.params.id);
      return listMatches(deps.pool, request.params.id, request.query, deps.matchRetention);
    },
  );

  app.get(
    `${pollWatchlistMatches.internalPath}/folios`,
    {
      schema: {
        params: pollWatchlistMatches.params,
        querystring: z.object({ at_most: exportWatchlistMatchesCsv.querystring.shape.max_rows }),
        response: {
          200: z.object({ folios: z.array(z.string()) }),
          ...errorResponses("unauthorized", "not_found"),
        },
      },
    },
    async (request) => {
      await deps.watchlists.assertOwned(internalCaller(request).tenantId, request.params.id);
      return { folios: await exportFolios(deps.pool, request.params.id, request.query.at_most) };
    },
  );
}
