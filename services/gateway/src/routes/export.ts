import { Readable } from "node:stream";
import {
  exportLeadsCsv,
  exportWatchlistMatchesCsv,
  getLeadsBatch,
  getWatchlist,
  type Lead,
  type MatchSummary,
} from "@th/api-schemas";
import { utcDay, type ViewedToday } from "@th/quota";
import { ApiError, type HttpApp, type InternalClient } from "@th/service-kit";
import type { FastifyReply, FastifyRequest } from "fastify";
import { leadCsvHeader, leadCsvRow, matchCsvHeader, matchCsvRow } from "../domain/csv.ts";
import { quotaUpgradeUrlFor, tenancyOf } from "../edge/authenticate.ts";
import { type Metering, refuseHeadOnMeteredRead } from "../edge/metering.ts";
import { callAs, type OwnerTarget, relay } from "./forward.ts";
import { ownerTarget, publicRoute } from "./operation.ts";

const PAGE_SIZE = 200;

interface ExportDeps {
  parcels: InternalClient;
  matcher?: InternalClient;
  metering: Metering;
  upgradeUrl: string;
  /** How many of these folios the tenant already viewed this UTC day (free to show again). */
  viewedToday: ViewedToday;
}

/**
 * Refuses an export whose new lead-views the month's remaining cannot cover, before the first
 * byte and any charge. An export costs one lead-view per parcel not yet viewed that UTC day, so
 * when its rows could cost more than remain, its parcels are asked for (`exportFolios`, distinct)
 * and only those not viewed today are priced: an export of parcels read today costs nothing.
 */
async function refuseBeyondQuota(
  request: FastifyRequest,
  deps: ExportDeps,
  rows: number,
  exportFolios: () => Promise<string[]>,
): Promise<void> {
  // A counter missing from Redis (a flush, a period's first read) is seeded from the ledger here:
  // the whole cap is not what remains.
  await request.limitHeaders();
  const quota = request.edge?.quota;
  const remaining = quota?.remaining ?? quota?.limit ?? 0;
  if (!quota || rows <= remaining) {
    return;
  }
  const folios = await exportFolios();
  const tenantId = tenancyOf(request).tenantId;
  const day = utcDay(new Date(quota.admittedAt));
  const fresh = folios.length - (await deps.viewedToday(tenantId, day, folios));
  if (fresh > remaining) {
    throw new ApiError(
      "quota_exceeded",
      `this export shows ${folios.length} parcels, ${fresh} of them not viewed today, and ${remaining} lead-views remain this month; narrow it or set max_rows`,
      {
        quota_resets_at: quota.resetsAt.toISOString(),
        upgrade_url: quotaUpgradeUrlFor(deps.upgradeUrl, tenancyOf(request).tier),
      },
    );
  }
}

/** The distinct folios an export's rows show, from the service that pages them. */
async function foliosFrom(
  upstream: InternalClient,
  request: FastifyRequest,
  target: string | OwnerTarget,
): Promise<string[]> {
  const answer = await callAs(upstream, request, "GET", target);
  if (answer.status !== 200) {
    throw new ApiError("unavailable", "the export could not be priced; try again shortly");
  }
  return (answer.body as { folios: string[] }).folios;
}

function searchPath(query: URLSearchParams, cursor: string | null): string {
  const params = new URLSearchParams(query);
  params.delete("max_rows");
  params.set("limit", String(PAGE_SIZE));
  if (cursor) {
    params.set("cursor", cursor);
  }
  return `${exportLeadsCsv.internalPath}?${params}`;
}

/**
 * The count that prices a lead export: the search's filters, counted no further than the rows
 * the export can write, so pricing reads at most max_rows parcels however broad the search.
 */
function countPath(query: URLSearchParams, maxRows: number): string {
  const filters = new URLSearchParams(query);
  filters.delete("max_rows");
  filters.set("at_most", String(maxRows));
  return `${exportLeadsCsv.internalPath}/count?${filters}`;
}

/** The folios of a lead export's rows, in its order, no further than its rows. */
function foliosPath(query: URLSearchParams, rows: number): string {
  const filters = new URLSearchParams(query);
  filters.delete("max_rows");
  filters.set("at_most", String(rows));
  return `${exportLeadsCsv.internalPath}/folios?${filters}`;
}

/** Streams the CSV lines as the client reads them. */
function sendCsv(
  reply: FastifyReply,
  filename: string,
  rows: number,
  lines: AsyncIterable<string>,
) {
  return reply
    .type("text/csv; charset=utf-8")
    .header("content-disposition", `attachment; filename="${filename}"`)
    .header("x-export-rows", String(rows))
    .send(Readable.from(lines));
}

/**
 * CSV export of a lead search: RFC 4180, streamed page by page as the client reads it, so a
 * 100k-row export holds one page in memory. It is priced before the first byte: when the month's
 * remaining lead-views cannot cover every row, the answer is 402 and nothing is charged. Each
 * page is then charged as it is written (one lead-view per parcel per UTC day).
 */
export function registerExportRoutes(app: HttpApp, deps: ExportDeps): void {
  registerLeadsExport(app, deps);
  const { matcher } = deps;
  if (matcher) {
    registerWatchlistExport(app, deps, matcher);
  }
}

function registerLeadsExport(app: HttpApp, deps: ExportDeps): void {
  app.get(exportLeadsCsv.path, publicRoute(exportLeadsCsv), async (request, reply) => {
    refuseHeadOnMeteredRead(request);
    const query = new URLSearchParams(
      request.url.includes("?") ? request.url.slice(request.url.indexOf("?") + 1) : "",
    );
    const counted = await callAs(
      deps.parcels,
      request,
      "GET",
      countPath(query, request.query.max_rows),
    );
    if (counted.status !== 200) {
      throw new ApiError("unavailable", "the export could not be priced; try again shortly");
    }
    const rows = Math.min((counted.body as { count: number }).count, request.query.max_rows);
    await refuseBeyondQuota(request, deps, rows, () =>
      foliosFrom(deps.parcels, request, foliosPath(query, rows)),
    );
    const date = new Date().toISOString().slice(0, 10);
    return sendCsv(reply, `leads-${date}.csv`, rows, leadLines(deps, request, query, rows));
  });
}

/** The header row, then the search's leads page by page, each page charged as it is written. */
async function* leadLines(
  deps: ExportDeps,
  request: FastifyRequest,
  query: URLSearchParams,
  rows: number,
) {
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

function registerWatchlistExport(app: HttpApp, deps: ExportDeps, matcher: InternalClient): void {
  app.get(
    exportWatchlistMatchesCsv.path,
    publicRoute(exportWatchlistMatchesCsv),
    async (request, reply) => {
      refuseHeadOnMeteredRead(request);
      const watchlist = await callAs(
        matcher,
        request,
        "GET",
        ownerTarget(getWatchlist, request.params),
      );
      if (watchlist.status !== 200) {
        return relay(reply, watchlist);
      }
      const rows = Math.min(
        (watchlist.body as { match_count: number }).match_count,
        request.query.max_rows,
      );
      // Priced by distinct parcels: a folio matched twice is one lead-view.
      await refuseBeyondQuota(request, deps, rows, () =>
        foliosFrom(matcher, request, {
          path: `${ownerTarget(exportWatchlistMatchesCsv, request.params).path}/folios?at_most=${rows}`,
          route: `${exportWatchlistMatchesCsv.internalPath}/folios`,
        }),
      );
      const matches = exportWatchlistMatchesCsv;
      return sendCsv(
        reply,
        `watchlist-${request.params.id}.csv`,
        rows,
        matchLines(deps, matcher, request, matches, rows),
      );
    },
  );
}

/**
 * The header row, then the watchlist's matches page by page with their leads, each page's
 * parcels charged as it is written.
 */
async function* matchLines(
  deps: ExportDeps,
  matcher: InternalClient,
  request: FastifyRequest,
  matches: typeof exportWatchlistMatchesCsv,
  rows: number,
) {
  yield matchCsvHeader();
  let cursor: string | null = null;
  let written = 0;
  while (written < rows) {
    const query = new URLSearchParams({ limit: String(Math.min(100, rows - written)) });
    if (cursor) {
      query.set("cursor", cursor);
    }
    const page = await callAs(
      matcher,
      request,
      "GET",
      ownerTarget(matches, request.params as Record<string, string>, query),
    );
    if (page.status !== 200) {
      throw new Error(`export page failed with ${page.status}`);
    }
    const body = page.body as { matches: MatchSummary[]; next_cursor: string; has_more: boolean };
    const leads = await leadsOf(deps, request, body.matches);
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

/** The leads of these matches that exist, by folio. */
async function leadsOf(
  deps: ExportDeps,
  request: FastifyRequest,
  matches: MatchSummary[],
): Promise<Map<string, Lead>> {
  const folios = [...new Set(matches.map((match) => match.folio))];
  const leads = new Map<string, Lead>();
  if (folios.length > 0) {
    const found = await callAs(deps.parcels, request, "POST", getLeadsBatch.internalPath, {
      folios,
    });
    for (const lead of (found.body as { leads: Lead[] }).leads) {
      leads.set(lead.folio, lead);
    }
  }
  return leads;
}
