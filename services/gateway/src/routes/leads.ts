import {
  getLead,
  getLeadsBatch,
  type Lead,
  type leadListQuerySchema,
  type leadLookupResponseSchema,
  type leadPageSchema,
  type MatchSummaryPage,
  pollWatchlistMatches,
  searchLeads,
} from "@th/api-schemas";
import { ApiError, type HttpApp, type InternalClient } from "@th/service-kit";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import type { LeadDocuments } from "../domain/lead-documents.ts";
import type { Metering } from "../edge/metering.ts";
import { callAs, relay, relayText, sendJsonText } from "./forward.ts";
import { type LeadAnswer, readLead, readLeadBatch } from "./held-leads.ts";
import { internalUrl, ownerTarget, publicRoute } from "./operation.ts";

interface LeadDeps {
  parcels: InternalClient;
  matcher: InternalClient;
  metering: Metering;
  /** The read model single and batch reads are served from where it holds their leads. */
  documents?: LeadDocuments;
}

type LeadListQuery = z.infer<typeof leadListQuerySchema>;
type LeadLookup = z.infer<typeof leadLookupResponseSchema>;

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
export function registerLeadRoutes(app: HttpApp, deps: LeadDeps): void {
  registerGetLeadRoute(app, deps);
  registerBatchRoute(app, deps);
  registerSearchRoute(app, deps);
}

function registerGetLeadRoute(app: HttpApp, deps: LeadDeps): void {
  const source = { parcels: deps.parcels, documents: deps.documents };
  app.get(getLead.path, publicRoute(getLead), async (request, reply) =>
    answerLeads(deps, request, reply, await readLead(source, request, request.params.folio)),
  );
}

function registerBatchRoute(app: HttpApp, deps: LeadDeps): void {
  const source = { parcels: deps.parcels, documents: deps.documents };
  app.post(getLeadsBatch.path, publicRoute(getLeadsBatch), async (request, reply) =>
    answerLeads(deps, request, reply, await readLeadBatch(source, request, request.body.folios)),
  );
}

/** Charges the leads an answer shows and sends it, or relays the owner's refusal uncharged. */
async function answerLeads(
  deps: LeadDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  answer: LeadAnswer,
) {
  if ("refused" in answer) {
    return relayText(reply, answer.refused);
  }
  await deps.metering.charge(request, answer.folios, "rest");
  return sendJsonText(reply, answer.text);
}

function registerSearchRoute(app: HttpApp, deps: LeadDeps): void {
  app.get(searchLeads.path, publicRoute(searchLeads), async (request, reply) => {
    if (request.query.watchlist_id !== undefined) {
      return pollWatchlistLeads(deps, request, reply, request.query, request.query.watchlist_id);
    }
    const upstream = await callAs(deps.parcels, request, "GET", internalUrl(searchLeads, request));
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
  });
}

/** Refuses a polling query that also filters, or asks for more than a polling page holds. */
function refuseMixedPolling(query: LeadListQuery): void {
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
}

/**
 * Paid polling: the matcher pages the watchlist's matches after the cursor; the parcels
 * service supplies their leads; each distinct parcel returned costs one lead-view (all or
 * nothing, 402 when the month's views cannot cover the page). The free summaries call is
 * `GET /v1/watchlists/{id}/matches`.
 */
async function pollWatchlistLeads(
  deps: LeadDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  query: LeadListQuery,
  watchlistId: string,
) {
  refuseMixedPolling(query);
  const params = new URLSearchParams({ limit: String(query.limit) });
  if (query.cursor !== undefined) {
    params.set("cursor", query.cursor);
  }
  const matches = await callAs(
    deps.matcher,
    request,
    "GET",
    ownerTarget(pollWatchlistMatches, { id: watchlistId }, params),
  );
  if (matches.status !== 200) {
    return relay(reply, matches);
  }
  const page = matches.body as MatchSummaryPage;
  const folios = [...new Set(page.matches.map((match) => match.folio))];
  let leads: Lead[] = [];
  if (folios.length > 0) {
    const found = await callAs(deps.parcels, request, "POST", getLeadsBatch.internalPath, {
      folios,
    });
    if (found.status !== 200) {
      return relay(reply, found);
    }
    const byFolio = new Map((found.body as LeadLookup).leads.map((lead) => [lead.folio, lead]));
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
