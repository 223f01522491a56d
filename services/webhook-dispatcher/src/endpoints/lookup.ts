// The endpoint service's dependencies and the two checks every endpoint call starts with.
import type { Pool } from "@th/db";
import { ApiError, type InternalCaller } from "@th/service-kit";
import type { WatchlistDirectory } from "../clients/internal.ts";
import { selectEndpoint } from "../db/endpoints.ts";
import type { SecretStore } from "../delivery/secret-store.ts";
import type { AddressPolicy } from "../domain/address.ts";
import { type EndpointLimits, type EndpointView, endpointView } from "../domain/endpoints.ts";

export interface EndpointDeps {
  pool: Pool;
  secrets: SecretStore;
  watchlists: WatchlistDirectory;
  policy: AddressPolicy;
  limits: EndpointLimits;
  now: () => number;
  wake: () => void;
}

/**
 * The caller's watchlist exists: endpoints are reached through their watchlist, so a deleted
 * watchlist's endpoints are not found (and cannot be rotated or listed) with it.
 */
export async function requireWatchlist(
  deps: EndpointDeps,
  caller: InternalCaller,
  watchlistId: string,
): Promise<void> {
  if (!(await deps.watchlists.owns(caller, watchlistId))) {
    throw new ApiError("not_found", `no watchlist ${watchlistId}`);
  }
}

export async function endpointOf(
  deps: EndpointDeps,
  tenantId: string,
  watchlistId: string,
  endpointId: string,
): Promise<EndpointView> {
  const row = await selectEndpoint(deps.pool, tenantId, watchlistId, endpointId);
  if (!row) {
    throw new ApiError(
      "not_found",
      `no webhook endpoint ${endpointId} on watchlist ${watchlistId}`,
    );
  }
  return endpointView(row);
}
