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
import { ApiError, errorResponses, type HttpApp, type InternalClient } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import { callAs, relay } from "./forward.ts";

const tags = ["watchlists"];
const security = [{ bearerAuth: [] }];
const rest = { edge: { surface: "rest" as const } };
const idParams = z.object({ id: z.string().min(1).max(64) });
const common = errorResponses("unauthorized", "rate_limited", "unavailable");

/**
 * A body that fails its schema is answered with every failing path named from `body`
 * (`body.recipe.filters.counties[1]`), unknown fields split one per key, as docs/recipes.md shows.
 */
function refuseInvalidBody(request: FastifyRequest, schema: z.ZodType): void {
  if (!request.validationError) {
    return;
  }
  const parsed = schema.safeParse(request.body);
  if (parsed.success) {
    throw request.validationError;
  }
  const fields = toRecipeIssues(parsed.error, "body");
  throw new ApiError(
    "invalid_request",
    `invalid body: ${fields.map((field) => `${field.path} ${field.message}`).join("; ")}`,
    { fields },
  );
}

function queryOf(url: string): string {
  return url.includes("?") ? url.slice(url.indexOf("?")) : "";
}

/**
 * Watchlists: CRUD, manual runs and free match polling, forwarded to the matcher as the caller.
 * The paid polling call (`GET /v1/leads?watchlist_id=`) lives with the other lead reads.
 */
export function registerWatchlistRoutes(
  app: HttpApp,
  deps: { matcher: InternalClient; dispatcher: InternalClient },
): void {
  const path = (id: string, rest = "") =>
    `/internal/v1/watchlists/${encodeURIComponent(id)}${rest}`;

  app.post(
    "/v1/watchlists",
    {
      config: rest,
      attachValidation: true,
      schema: {
        tags,
        security,
        operationId: "createWatchlist",
        summary:
          "Create a watchlist; its recipe is matched against every parcel ingested from now on",
        body: watchlistCreateSchema,
        response: { 201: watchlistSchema, ...common, ...errorResponses("conflict") },
      },
    },
    async (request, reply) => {
      refuseInvalidBody(request, watchlistCreateSchema);
      return relay(
        reply,
        await callAs(deps.matcher, request, "POST", "/internal/v1/watchlists", request.body),
      );
    },
  );

  app.get(
    "/v1/watchlists",
    {
      config: rest,
      schema: {
        tags,
        security,
        operationId: "listWatchlists",
        summary: "The tenant's watchlists, oldest first, with their activity",
        querystring: z.object({
          cursor: z.string().min(1).max(256).optional(),
          limit: z.coerce.number().int().min(1).max(100).default(50),
        }),
        response: { 200: watchlistListSchema, ...common },
      },
    },
    async (request, reply) =>
      relay(
        reply,
        await callAs(
          deps.matcher,
          request,
          "GET",
          `/internal/v1/watchlists${queryOf(request.url)}`,
        ),
      ),
  );

  app.get(
    "/v1/watchlists/:id",
    {
      config: rest,
      schema: {
        tags,
        security,
        operationId: "getWatchlist",
        params: idParams,
        response: { 200: watchlistSchema, ...common, ...errorResponses("not_found") },
      },
    },
    async (request, reply) =>
      relay(reply, await callAs(deps.matcher, request, "GET", path(request.params.id))),
  );

  app.patch(
    "/v1/watchlists/:id",
    {
      config: rest,
      attachValidation: true,
      schema: {
        tags,
        security,
        operationId: "updateWatchlist",
        summary:
          "Rename a watchlist or change its recipe; a changed recipe is a new version applied to parcels ingested from now on",
        params: idParams,
        body: watchlistUpdateSchema,
        response: { 200: watchlistSchema, ...common, ...errorResponses("not_found") },
      },
    },
    async (request, reply) => {
      refuseInvalidBody(request, watchlistUpdateSchema);
      return relay(
        reply,
        await callAs(deps.matcher, request, "PATCH", path(request.params.id), request.body),
      );
    },
  );

  app.delete(
    "/v1/watchlists/:id",
    {
      config: rest,
      schema: {
        tags,
        security,
        operationId: "deleteWatchlist",
        params: idParams,
        response: {
          204: z.null().describe("No content"),
          ...common,
          ...errorResponses("not_found"),
        },
      },
    },
    async (request, reply) => {
      const upstream = await callAs(deps.matcher, request, "DELETE", path(request.params.id));
      if (upstream.status !== 204) {
        return relay(reply, upstream);
      }
      // Its webhook endpoints go with it, which dead-letters what was queued for them. The
      // watchlist is gone either way: should the dispatcher not answer, the endpoints can still
      // be removed one by one.
      const endpoints = await callAs(
        deps.dispatcher,
        request,
        "DELETE",
        path(request.params.id, "/webhooks"),
      ).catch((error: unknown) => ({ status: 0, body: String(error) }));
      if (endpoints.status !== 200) {
        request.log.warn(
          { status: endpoints.status, watchlist: request.params.id },
          "the deleted watchlist's webhook endpoints could not be removed",
        );
      }
      return reply.status(204).send(null);
    },
  );

  app.post(
    "/v1/watchlists/:id/run",
    {
      config: rest,
      schema: {
        tags,
        security,
        operationId: "runWatchlist",
        summary:
          "Evaluate the current recipe against the most recent parcels of the store now; matches are emitted marked manual_run (202, then poll the run)",
        params: idParams,
        response: {
          202: manualRunSchema,
          ...common,
          ...errorResponses("not_found", "conflict"),
        },
      },
    },
    async (request, reply) =>
      relay(reply, await callAs(deps.matcher, request, "POST", path(request.params.id, "/runs"))),
  );

  app.get(
    "/v1/watchlists/:id/runs/:run_id",
    {
      config: rest,
      schema: {
        tags,
        security,
        operationId: "getWatchlistRun",
        summary: "A manual run's status, progress and counts",
        params: z.object({
          id: z.string().min(1).max(64),
          run_id: z.string().min(1).max(64),
        }),
        response: { 200: manualRunSchema, ...common, ...errorResponses("not_found") },
      },
    },
    async (request, reply) =>
      relay(
        reply,
        await callAs(
          deps.matcher,
          request,
          "GET",
          path(request.params.id, `/runs/${encodeURIComponent(request.params.run_id)}`),
        ),
      ),
  );

  app.get(
    "/v1/watchlists/:id/matches",
    {
      config: rest,
      schema: {
        tags,
        security,
        operationId: "pollWatchlistMatches",
        summary:
          "Free polling: the watchlist's matches since the cursor as summaries (folio, score, signals_fired, observed_at), oldest first; no parcel details, no lead-views, works with the quota exhausted",
        params: idParams,
        querystring: matchPageQuerySchema,
        response: { 200: matchSummaryPageSchema, ...common, ...errorResponses("not_found") },
      },
    },
    async (request, reply) =>
      relay(
        reply,
        await callAs(
          deps.matcher,
          request,
          "GET",
          path(request.params.id, `/matches${queryOf(request.url)}`),
        ),
      ),
  );
}
