import type { Period, UsageLoader } from "@th/quota";
import { utcDay } from "@th/quota";
import { ApiError, createInternalClient, type InternalCaller } from "@th/service-kit";

export interface InternalClientOptions {
  baseUrl: string;
  internalToken: string;
  timeoutMs: number;
}

/** The quota ledger's figures for seeding lead-view counters, as the gateway loads them. */
export function ledgerUsageLoader(options: InternalClientOptions): UsageLoader {
  const ledger = createInternalClient(options);
  return async (tenantId: string, period: Period, day: string) => {
    const query = new URLSearchParams({ period_start: utcDay(period.start), day });
    const reply = await ledger.send(
      "GET",
      `/internal/v1/usage/${encodeURIComponent(tenantId)}/seed?${query}`,
    );
    if (reply.status !== 200) {
      throw new Error(`lead-view usage unavailable (ledger answered ${reply.status})`);
    }
    const body = reply.body as { used: number; folios_today: string[]; caught_up: boolean };
    if (!body.caught_up) {
      throw new Error("the ledger has not caught up; lead-view usage is being recovered");
    }
    return { used: body.used, foliosToday: body.folios_today };
  };
}

/**
 * Whether a watchlist belongs to a tenant. The matcher owns watchlists; the dispatcher asks it
 * once, when an endpoint is subscribed (never on the delivery path).
 */
export interface WatchlistDirectory {
  owns(caller: InternalCaller, watchlistId: string): Promise<boolean>;
}

/** Asks `GET /internal/v1/watchlists/:id` as the caller (tenant-scoped there): 200 yes, 404 no. */
export function matcherWatchlists(options: InternalClientOptions): WatchlistDirectory {
  const matcher = createInternalClient(options);
  return {
    async owns(caller, watchlistId) {
      let reply: { status: number; body: unknown };
      try {
        reply = await matcher.send(
          "GET",
          `/internal/v1/watchlists/${encodeURIComponent(watchlistId)}`,
          { identity: caller },
        );
      } catch {
        throw new ApiError(
          "unavailable",
          "watchlists cannot be checked right now; try again shortly",
        );
      }
      if (reply.status === 404 || reply.status === 403) {
        return false;
      }
      if (reply.status !== 200) {
        throw new ApiError(
          "unavailable",
          "watchlists cannot be checked right now; try again shortly",
        );
      }
      const owner = (reply.body as { tenant_id?: unknown } | undefined)?.tenant_id;
      return owner === undefined || owner === caller.tenantId;
    },
  };
}
