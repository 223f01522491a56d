import { z } from "zod";
import {
  folioInputSchema,
  leadLookupRequestSchema,
  leadLookupResponseSchema,
  leadPageSchema,
  leadSchema,
  leadSearchQuerySchema,
} from "../lead.ts";
import { matchSummarySchema } from "../watchlist.ts";
import { defineOperation } from "./operation.ts";

// Lead reads, owned by the parcels service. Each costs lead-views, which the gateway charges
// before the answer leaves; polling a watchlist's leads also asks the matcher for the matches.

const leads = { owner: "parcels", tags: ["leads"] } as const;
// Every lead read can be refused at the edge, refused for want of lead-views, or find the
// parcels service unavailable.
const paidErrors = ["unauthorized", "quota_exceeded", "rate_limited", "unavailable"] as const;

/** The search query plus the polling mode: a watchlist's matched leads since a cursor. */
export const leadListQuerySchema = z.strictObject({
  ...leadSearchQuerySchema.shape,
  watchlist_id: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .describe(
      "Polling: the watchlist's matched leads since `cursor`, oldest match first (100 per page at most); one lead-view per parcel returned. Matches are kept 90 days: a cursor from before the matches kept answers 410 cursor_expired",
    ),
});

const leadListPageSchema = leadPageSchema.extend({
  matches: z
    .array(matchSummarySchema)
    .optional()
    .describe("With watchlist_id: the matches of this page, in order; leads holds their parcels"),
  has_more: z.boolean().optional().describe("With watchlist_id: more matches are waiting"),
});

export const getLead = defineOperation({
  ...leads,
  operationId: "getLead",
  method: "GET",
  path: "/v1/leads/:folio",
  // A segment of its own: no folio can spell a sibling route (`count`, `lookup`) of the owner.
  internalPath: "/internal/v1/parcels/by-folio/:folio",
  summary:
    "One lead by folio (county number + county parcel id, e.g. 23-3059010240130); one lead-view",
  params: z.object({ folio: folioInputSchema }),
  responses: { 200: leadSchema },
  errors: [...paidErrors, "not_found", "conflict"],
});

export const getLeadsBatch = defineOperation({
  ...leads,
  operationId: "getLeadsBatch",
  method: "POST",
  path: "/v1/leads/batch",
  internalPath: "/internal/v1/parcels/lookup",
  summary:
    "Up to 100 leads at once; one lead-view per folio that exists, all or nothing against the quota",
  body: leadLookupRequestSchema,
  responses: { 200: leadLookupResponseSchema },
  errors: paidErrors,
});

export const searchLeads = defineOperation({
  ...leads,
  operationId: "searchLeads",
  method: "GET",
  path: "/v1/leads",
  internalPath: "/internal/v1/parcels",
  summary:
    "Search leads by county, city, ZIP, use class, signals, value and equity; 50 per page (200 at most), opaque cursor. Or, with watchlist_id, poll the watchlist's matched leads since the cursor. One lead-view per lead returned",
  // A query string cannot be a shared component in OpenAPI; the same fields, inlined.
  querystring: leadListQuerySchema,
  responses: { 200: leadListPageSchema },
  // cursor_expired: with watchlist_id, a cursor from before the matches kept (decision 0394).
  errors: [...paidErrors, "not_found", "cursor_expired"],
});

/** The lead reads, in the order the gateway registers them. */
export const leadOperations = [getLead, getLeadsBatch, searchLeads] as const;
