import { getWatchlist } from "@th/api-schemas";
import {
  ApiError,
  createInternalClient,
  type InternalCaller,
  type InternalClientOptions,
} from "@th/service-kit";

/**
 * A GET of another service's internal API on the one internal client, signed for the route it
 * reaches there, as status and parsed body.
 */
export function internalGetter(
  options: InternalClientOptions,
): (path: string, _tenantId: string, route: string) => Promise<{ status: number; body: unknown }> {
  const client = createInternalClient(options);
  return (path, _tenantId, route) => client.send("GET", path, { route });
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
          { route: getWatchlist.internalPath, identity: caller },
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
