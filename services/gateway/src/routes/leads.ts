import {
  folioInputSchema,
  type Lead,
  leadLookupRequestSchema,
  leadLookupResponseSchema,
  leadPageSchema,
  leadSchema,
  leadSearchQuerySchema,
  type MatchSummaryPage,
  matchSummarySchema,
} from "@th/api-schemas";
import { ApiError, errorResponses, type HttpApp, type InternalClient } from "@th/service-kit";
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { Metering } from "../edge/metering.ts";
import { callAs, callAsText, foliosOfLeads, relay, relayText, sendJsonText } from "./forward.ts";

const tags = ["leads"];
const security = [{ bearerAuth: [] }];
const paidErrors = errorResponses("unauthorized", "quota_exceeded", "rate_limited", "unavailable");

/** The search query plus the polling mode: a watchlist's matched leads since a cursor. */
const leadListQuerySchema = z.strictObject({
  ...leadSearchQuerySchema.shape,
  watchlist_id: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .describe(
      "Polling: the watchlist's matched leads since `cursor`, oldest match first (100 per page at most); one lead-view per parcel returned",
    ),
});

const leadListPageSchema = leadPageSchema.extend({
  matches: z
    .array(matchSummarySchema)
    .optional()
    .describe("With watchlist_id: the matches of this page, in order; leads holds their parcels"),
  has_more: z.boolean().optional().describe("With watchlist_id: more matches are waiting"),
});

const SEARCH_FILTERS = [
  "county",
  "city",
  "zip",
  "use_class",
  "signals",
  "min_just_value",
  "max_just_value",
  "min_equity",
  "max_equity",
] as const;

/**
 * Lead reads. Each parcel shown costs one lead-view per tenant and UTC day, on every surface;
 * only parcels that exist are charged, and a read the month's remaining views cannot cover is
 * refused whole with 402.
 */
export function registerLeadRoutes(
  app: HttpApp,
  deps: { parcels: InternalClient; matcher: InternalClient; metering: Metering },
): void {
  app.get(
    "/v1/leads/:folio",
    {
      schema: {
        tags,
        security,
        operationId: "getLead",
        summary:
          "One lead by folio (county number + county parcel id, e.g. 23-3059010240130); one lead-view",
        params: z.object({ folio: folioInputSchema }),
        response: { 200: leadSchema, ...paidErrors, ...errorResponses("not_found", "conflict") },
      },
    },
    async (request, reply) => {
      const upstream = await callAsText(
        deps.parcels,
        request,
        "GET",
        `/internal/v1/parcels/${encodeURIComponent(request.params.folio)}`,
      );
      if (upstream.status !== 200) {
        return relayText(reply, upstream);
      }
      const folios = foliosOfLeads(upstream, (body) => [(body as Lead).folio]);
      await deps.metering.charge(request, folios, "rest");
      return sendJsonText(reply, upstream.text);
    },
  );

  app.post(
    "/v1/leads/batch",
    {
      schema: {
        tags,
        security,
        operationId: "getLeadsBatch",
        summary:
          "Up to 100 leads at once; one lead-view per folio that exists, all or nothing against the quota",
        body: leadLookupRequestSchema,
        response: { 200: leadLookupResponseSchema, ...paidErrors },
      },
    },
    async (request, reply) => {
      const upstream = await callAsText(
        deps.parcels,
        request,
        "POST",
        "/internal/v1/parcels/lookup",
        request.body,
      );
      if (upstream.status !== 200) {
        return relayText(reply, upstream);
      }
      const folios = foliosOfLeads(upstream, (body) =>
        (body as z.infer<typeof leadLookupResponseSchema>).leads.map((lead) => lead.folio),
      );
      await deps.metering.charge(request, folios, "rest");
      return sendJsonText(reply, upstream.text);
    },
  );

  app.get(
    "/v1/leads",
    {
      schema: {
        tags,
        security,
        operationId: "searchLeads",
        summary:
          "Search leads by county, city, ZIP, use class, signals, value and equity; 50 per page (200 at most), opaque cursor. Or, with watchlist_id, poll the watchlist's matched leads since the cursor. One lead-view per lead returned",
        // A query string cannot be a shared component in OpenAPI; the same fields, inlined.
        querystring: leadListQuerySchema,
        response: { 200: leadListPageSchema, ...paidErrors, ...errorResponses("not_found") },
      },
    },
    async (request, reply) => {
      if (request.query.watchlist_id !== undefined) {
        return pollWatchlistLeads(request, reply, request.query, request.query.watchlist_id);
      }
      const query = request.url.includes("?") ? request.url.slice(request.url.indexOf("?")) : "";
      const upstream = await callAs(deps.parcels, request, "GET", `/internal/v1/parcels${query}`);
      if (upstream.status !== 200) {
        return relay(reply, upstream);
      }
      const page = upstream.body as z.infer<typeof leadPageSchema>;
      await deps.metering.charge(
        request,
        page.leads.map((lead) => lead.folio),
        "rest",
      );
      return page;
    },
  );

  /**
   * Paid polling: the matcher pages the watchlist's matches after the cursor; the parcels
   * service supplies their leads; each distinct parcel returned costs one lead-view (all or
   * nothing, 402 when the month's views cannot cover the page). The free summaries call is
   * `GET /v1/watchlists/{id}/matches`.
   */
  async function pollWatchlistLeads(
    request: FastifyRequest,
    reply: FastifyReply,
    query: z.infer<typeof leadListQuerySchema>,
    watchlistId: string,
  ) {
    const mixed = SEARCH_FILTERS.filter((name) => query[name] !== undefined);
    if (mixed.length > 0) {
      throw new ApiError(
        "invalid_request",
        `invalid querystring: watchlist_id polls a watchlist's matches and cannot be combined with ${mixed.join(", ")}`,
        {
          fields: mixed.map((name) => ({
            path: `querystring.${name}`,
            message: "not allowed with watchlist_id",
          })),
        },
      );
    }
    if (query.limit > 100) {
      throw new ApiError(
        "invalid_request",
        "invalid querystring: limit is at most 100 with watchlist_id",
        {
          fields: [{ path: "querystring.limit", message: "must be at most 100 with watchlist_id" }],
        },
      );
    }
    const params = new URLSearchParams({ limit: String(query.limit) });
    if (query.cursor !== undefined) {
      params.set("cursor", query.cursor);
    }
    const matches = await callAs(
      deps.matcher,
      request,
      "GET",
      `/internal/v1/watchlists/${encodeURIComponent(watchlistId)}/matches?${params}`,
    );
    if (matches.status !== 200) {
      return relay(reply, matches);
    }
    const page = matches.body as MatchSummaryPage;
    const folios = [...new Set(page.matches.map((match) => match.folio))];
    let leads: Lead[] = [];
    if (folios.length > 0) {
      const found = await callAs(deps.parcels, request, "POST", "/internal/v1/parcels/lookup", {
        folios,
      });
      if (found.status !== 200) {
        return relay(reply, found);
      }
      const byFolio = new Map(
        (found.body as z.infer<typeof leadLookupResponseSchema>).leads.map((lead) => [
          lead.folio,
          lead,
        ]),
      );
      leads = folios.map((folio) => byFolio.get(folio)).filter((lead) => lead !== undefined);
    }
    await deps.metering.charge(
      request,
      leads.map((lead) => lead.folio),
      "rest",
    );
    return {
      leads,
      matches: page.matches,
      next_cursor: page.next_cursor,
      has_more: page.has_more,
    };
  }
}
