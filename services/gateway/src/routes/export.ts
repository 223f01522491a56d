import { Readable } from "node:stream";
import { type Lead, leadSearchQuerySchema, type MatchSummary, queryInteger } from "@th/api-schemas";
import { ApiError, errorResponses, type HttpApp, type InternalClient } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import { leadCsvHeader, leadCsvRow, matchCsvHeader, matchCsvRow } from "../domain/csv.ts";
import { quotaUpgradeUrlFor, tenancyOf } from "../edge/authenticate.ts";
import { type Metering, refuseHeadOnMeteredRead } from "../edge/metering.ts";
import { callAs, relay } from "./forward.ts";

const PAGE_SIZE = 200;
export const EXPORT_MAX_ROWS = 100_000;

const exportQuerySchema = z.strictObject({
  ...leadSearchQuerySchema.omit({ cursor: true, limit: true }).shape,
  max_rows: queryInteger(1, EXPORT_MAX_ROWS)
    .default(EXPORT_MAX_ROWS)
    .describe("Stop after this many rows"),
});

/** Refuses an export its row count cannot be paid for, before the first byte and any charge. */
async function refuseBeyondQuota(
  request: FastifyRequest,
  rows: number,
  upgradeUrl: string,
): Promise<void> {
  // A counter missing from Redis (a flush, a period's first read) is seeded from the ledger here:
  // the whole cap is not what remains.
  await request.limitHeaders();
  const quota = request.edge?.quota;
  const remaining = quota?.remaining ?? quota?.limit ?? 0;
  if (quota && rows > remaining) {
    throw new ApiError(
      "quota_exceeded",
      `this export has up to ${rows} rows and ${remaining} lead-views remain this month; narrow it or set max_rows`,
      {
        quota_resets_at: quota.resetsAt.toISOString(),
        upgrade_url: quotaUpgradeUrlFor(upgradeUrl, tenancyOf(request).tier),
      },
    );
  }
}

function searchPath(query: URLSearchParams, cursor: string | null): string {
  const params = new URLSearchParams(query);
  params.delete("max_rows");
  params.set("limit", String(PAGE_SIZE));
  if (cursor) {
    params.set("cursor", cursor);
  }
  return `/internal/v1/parcels?${params}`;
}

/**
 * CSV export of a lead search: RFC 4180, streamed page by page as the client reads it, so a
 * 100k-row export holds one page in memory. It is priced before the first byte: when the month's
 * remaining lead-views cannot cover every row, the answer is 402 and nothing is charged. Each
 * page is then charged as it is written (one lead-view per parcel per UTC day).
 */
export function registerExportRoutes(
  app: HttpApp,
  deps: {
    parcels: InternalClient;
    matcher?: InternalClient;
    metering: Metering;
    upgradeUrl: string;
  },
): void {
  app.get(
    "/v1/exports/leads.csv",
    {
      config: { edge: { surface: "csv" } },
      schema: {
        tags: ["leads"],
        security: [{ bearerAuth: [] }],
        operationId: "exportLeadsCsv",
        summary:
          "Every lead of a search as CSV (text/csv, RFC 4180, documented columns); one lead-view per row, refused with 402 up front when the quota cannot cover the export",
        querystring: exportQuerySchema,
        response: {
          // A stream of text/csv, sent as is: the header row, then one row per lead.
          200: z.unknown().describe("text/csv; header row, then one row per lead"),
          ...errorResponses(
            "unauthorized",
            "tier_required",
            "quota_exceeded",
            "rate_limited",
            "unavailable",
          ),
        },
      },
    },
    async (request, reply) => {
      refuseHeadOnMeteredRead(request);
      const query = new URLSearchParams(
        request.url.includes("?") ? request.url.slice(request.url.indexOf("?") + 1) : "",
      );
      const filters = new URLSearchParams(query);
      filters.delete("max_rows");
      const counted = await callAs(
        deps.parcels,
        request,
        "GET",
        `/internal/v1/parcels/count?${filters}`,
      );
      if (counted.status !== 200) {
        throw new ApiError("unavailable", "the export could not be priced; try again shortly");
      }
      const rows = Math.min((counted.body as { count: number }).count, request.query.max_rows);
      await refuseBeyondQuota(request, rows, deps.upgradeUrl);
      async function* lines() {
        yield leadCsvHeader();
        let cursor: string | null = null;
        let written = 0;
        while (written < rows) {
          const page = await callAs(deps.parcels, request, "GET", searchPath(query, cursor));
          if (page.status !== 200) {
            throw new Error(`export page failed with ${page.status}`);
          }
          const body = page.body as { leads: Lead[]; next_cursor: string | null };
          const leads = body.leads.slice(0, rows - written);
          await deps.metering.charge(
            request,
            leads.map((lead) => lead.folio),
            "csv",
          );
          yield leads.map(leadCsvRow).join("");
          written += leads.length;
          if (!body.next_cursor || leads.length === 0) {
            return;
          }
          cursor = body.next_cursor;
        }
      }
      const date = new Date().toISOString().slice(0, 10);
      return reply
        .type("text/csv; charset=utf-8")
        .header("content-disposition", `attachment; filename="leads-${date}.csv"`)
        .header("x-export-rows", String(rows))
        .send(Readable.from(lines()));
    },
  );

  const { matcher } = deps;
  if (!matcher) {
    return;
  }
  const matcherUpstream: InternalClient = matcher;
  app.get(
    "/v1/watchlists/:id/export.csv",
    {
      config: { edge: { surface: "csv" } },
      schema: {
        tags: ["watchlists"],
        security: [{ bearerAuth: [] }],
        operationId: "exportWatchlistMatchesCsv",
        summary:
          "A watchlist's matches as CSV: score, signals fired and match time, then the lead columns; one lead-view per parcel, refused with 402 up front when the quota cannot cover it",
        params: z.object({ id: z.string().min(1).max(64) }),
        querystring: z.object({
          max_rows: z.coerce.number().int().min(1).max(EXPORT_MAX_ROWS).default(EXPORT_MAX_ROWS),
        }),
        response: {
          // A stream of text/csv, sent as is.
          200: z.unknown().describe("text/csv; header row, then one row per match"),
          ...errorResponses(
            "unauthorized",
            "tier_required",
            "not_found",
            "quota_exceeded",
            "rate_limited",
          ),
        },
      },
    },
    async (request, reply) => {
      refuseHeadOnMeteredRead(request);
      const base = `/internal/v1/watchlists/${encodeURIComponent(request.params.id)}`;
      const watchlist = await callAs(matcherUpstream, request, "GET", base);
      if (watchlist.status !== 200) {
        return relay(reply, watchlist);
      }
      const rows = Math.min(
        (watchlist.body as { match_count: number }).match_count,
        request.query.max_rows,
      );
      await refuseBeyondQuota(request, rows, deps.upgradeUrl);
      async function* lines() {
        yield matchCsvHeader();
        let cursor: string | null = null;
        let written = 0;
        while (written < rows) {
          const query = new URLSearchParams({ limit: String(Math.min(100, rows - written)) });
          if (cursor) {
            query.set("cursor", cursor);
          }
          const page = await callAs(matcherUpstream, request, "GET", `${base}/matches?${query}`);
          if (page.status !== 200) {
            throw new Error(`export page failed with ${page.status}`);
          }
          const body = page.body as {
            matches: MatchSummary[];
            next_cursor: string;
            has_more: boolean;
          };
          const folios = [...new Set(body.matches.map((match) => match.folio))];
          const leads = new Map<string, Lead>();
          if (folios.length > 0) {
            const found = await callAs(
              deps.parcels,
              request,
              "POST",
              "/internal/v1/parcels/lookup",
              { folios },
            );
            for (const lead of (found.body as { leads: Lead[] }).leads) {
              leads.set(lead.folio, lead);
            }
          }
          await deps.metering.charge(request, [...leads.keys()], "csv");
          yield body.matches
            .flatMap((match) => {
              const lead = leads.get(match.folio);
              return lead ? [matchCsvRow(match, lead)] : [];
            })
            .join("");
          written += body.matches.length;
          if (!body.has_more || body.matches.length === 0) {
            return;
          }
          cursor = body.next_cursor;
        }
      }
      return reply
        .type("text/csv; charset=utf-8")
        .header("content-disposition", `attachment; filename="watchlist-${request.params.id}.csv"`)
        .header("x-export-rows", String(rows))
        .send(Readable.from(lines()));
    },
  );
}
