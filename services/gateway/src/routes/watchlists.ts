import {
  bodyIssues,
  createWatchlist,
  deleteWatchlist,
  getWatchlist,
  getWatchlistRun,
  listWatchlists,
  listWebhookEndpoints,
  pollWatchlistMatches,
  runWatchlist,
  updateWatchlist,
} from "@th/api-schemas";
import { ApiError, type HttpApp, type InternalClient } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import type { z } from "zod";
import { callAs, relay } from "./forward.ts";
import { callOwner, forwardOperation, ownerTarget, publicRoute } from "./operation.ts";

interface WatchlistDeps {
  matcher: InternalClient;
  dispatcher: InternalClient;
}

/**
 * A body that fails its schema is answered with every failing path named from `body`
 * (`body.recipe.filters.counties[1]`), unknown fields split one per key, as docs/recipes.md shows.
 */
function refuseInvalidBody(request: FastifyRequest, schema: z.ZodType): void {
  if (!request.validationError) {
    return;
  }
  const issues = bodyIssues(schema, request.body);
  if (issues === undefined) {
    throw request.validationError;
  }
  throw new ApiError("invalid_request", issues.message, { fields: issues.fields });
}

/**
 * Watchlists: CRUD, manual runs and free match polling, forwarded to the matcher as the caller.
 * The paid polling call (`GET /v1/leads?watchlist_id=`) lives with the other lead reads.
 */
export function registerWatchlistRoutes(app: HttpApp, deps: WatchlistDeps): void {
  registerCreateRoute(app, deps);
  forwardOperation(app, listWatchlists, deps.matcher);
  forwardOperation(app, getWatchlist, deps.matcher);
  registerUpdateRoute(app, deps);
  registerDeleteRoute(app, deps);
  forwardOperation(app, runWatchlist, deps.matcher);
  forwardOperation(app, getWatchlistRun, deps.matcher);
  forwardOperation(app, pollWatchlistMatches, deps.matcher);
}

function registerCreateRoute(app: HttpApp, deps: WatchlistDeps): void {
  app.post(
    createWatchlist.path,
    { ...publicRoute(createWatchlist), attachValidation: true },
    async (request, reply) => {
      refuseInvalidBody(request, createWatchlist.body);
      return relay(reply, await callOwner(deps.matcher, createWatchlist, request));
    },
  );
}

function registerUpdateRoute(app: HttpApp, deps: WatchlistDeps): void {
  app.patch(
    updateWatchlist.path,
    { ...publicRoute(updateWatchlist), attachValidation: true },
    async (request, reply) => {
      refuseInvalidBody(request, updateWatchlist.body);
      return relay(reply, await callOwner(deps.matcher, updateWatchlist, request));
    },
  );
}

function registerDeleteRoute(app: HttpApp, deps: WatchlistDeps): void {
  app.delete(deleteWatchlist.path, publicRoute(deleteWatchlist), async (request, reply) => {
    const upstream = await callOwner(deps.matcher, deleteWatchlist, request);
    if (upstream.status !== 204) {
      return relay(reply, upstream);
    }
    // Its webhook endpoints go with it, which dead-letters what was queued for them. The
    // watchlist is gone either way: should the dispatcher not answer, the endpoints can still
    // be removed one by one. The dispatcher removes them all on a DELETE of the collection.
    const endpoints = await callAs(
      deps.dispatcher,
      request,
      "DELETE",
      ownerTarget(listWebhookEndpoints, request.params),
    ).catch((error: unknown) => ({ status: 0, body: String(error) }));
    if (endpoints.status !== 200) {
      request.log.warn(
        { status: endpoints.status, watchlist: request.params.id },
        "the deleted watchlist's webhook endpoints could not be removed",
      );
    }
    return reply.status(204).send(null);
  });
}
