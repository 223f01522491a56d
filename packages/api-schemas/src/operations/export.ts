import { z } from "zod";
import { leadSearchQuerySchema, queryInteger } from "../lead.ts";
import { defineOperation } from "./operation.ts";

// CSV exports: the gateway prices an export up front, then pages through the owner's read and
// writes each page as CSV rows, charging it as it goes.

const EXPORT_MAX_ROWS = 100_000;

export const exportLeadsCsv = defineOperation({
  operationId: "exportLeadsCsv",
  method: "GET",
  path: "/v1/exports/leads.csv",
  // Priced at `/internal/v1/parcels/count` (and `…/folios` when its rows could cost more than
  // remains), then paged through the lead search.
  internalPath: "/internal/v1/parcels",
  owner: "parcels",
  tags: ["leads"],
  surface: "csv",
  summary:
    "Every lead of a search as CSV (text/csv, RFC 4180, documented columns); one lead-view per row whose parcel was not viewed that UTC day, refused with 402 up front when the remaining lead-views cannot cover those",
  querystring: z.strictObject({
    ...leadSearchQuerySchema.omit({ cursor: true, limit: true }).shape,
    max_rows: queryInteger(1, EXPORT_MAX_ROWS)
      .default(EXPORT_MAX_ROWS)
      .describe("Stop after this many rows"),
  }),
  // A stream of text/csv, sent as is: the header row, then one row per lead.
  responses: { 200: z.unknown().describe("text/csv; header row, then one row per lead") },
  errors: ["unauthorized", "tier_required", "quota_exceeded", "rate_limited", "unavailable"],
});

export const exportWatchlistMatchesCsv = defineOperation({
  operationId: "exportWatchlistMatchesCsv",
  method: "GET",
  path: "/v1/watchlists/:id/export.csv",
  // Priced by the distinct parcels of its matches (`…/matches/folios`), then paged through its
  // matches; their leads come from the parcels service's batch read.
  internalPath: "/internal/v1/watchlists/:id/matches",
  owner: "matcher",
  tags: ["watchlists"],
  surface: "csv",
  summary:
    "A watchlist's matches as CSV: score, signals fired and match time, then the lead columns; one lead-view per distinct parcel not viewed that UTC day, refused with 402 up front when the quota cannot cover those",
  params: z.object({ id: z.string().min(1).max(64) }),
  querystring: z.object({
    max_rows: z.coerce.number().int().min(1).max(EXPORT_MAX_ROWS).default(EXPORT_MAX_ROWS),
  }),
  // A stream of text/csv, sent as is.
  responses: { 200: z.unknown().describe("text/csv; header row, then one row per match") },
  errors: ["unauthorized", "tier_required", "not_found", "quota_exceeded", "rate_limited"],
});

/** The CSV exports, in the order the gateway registers them. */
export const exportOperations = [exportLeadsCsv, exportWatchlistMatchesCsv] as const;
