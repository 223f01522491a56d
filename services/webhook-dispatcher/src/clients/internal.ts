import { ApiError, INTERNAL_HEADERS, type InternalCaller } from "@th/service-kit";

export interface InternalClientOptions {
  baseUrl: string;
  internalToken: string;
  timeoutMs: number;
}

/** A GET of another service's internal API, answered as status and parsed body. */
export async function getInternal(
  options: InternalClientOptions,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${options.baseUrl}${path}`, {
    headers: { [INTERNAL_HEADERS.token]: options.internalToken, ...headers },
    signal: AbortSignal.timeout(options.timeoutMs),
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: response.status, body };
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
  return {
    async owns(caller, watchlistId) {
      let reply: { status: number; body: unknown };
      try {
        reply = await getInternal(
          options,
          `/internal/v1/watchlists/${encodeURIComponent(watchlistId)}`,
          {
            [INTERNAL_HEADERS.tenant]: caller.tenantId,
            [INTERNAL_HEADERS.member]: caller.memberId,
            [INTERNAL_HEADERS.key]: caller.keyId,
          },
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
