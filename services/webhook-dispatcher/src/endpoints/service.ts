// What the webhook routes and the compromise handler ask of endpoints, always within one tenant:
// the pure rules in domain/, the queries in db/, the order and the errors here.
import { inTransaction } from "@th/db";
import { ApiError, type InternalCaller } from "@th/service-kit";
import {
  countEndpoints,
  insertEndpoint,
  lockEndpoint,
  lockTenantSubscribes,
  markEndpointRemoved,
  markEndpointsOfWatchlistRemoved,
  selectEndpointsOf,
  selectEndpointsSignedBefore,
} from "../db/endpoints.ts";
import { hasSecretCreatedAfter } from "../db/secrets.ts";
import { refuseEndpointUrl } from "../delivery/sender.ts";
import {
  type EndpointView,
  endpointCapRefusal,
  endpointView,
  newEndpointId,
  subscribableEvents,
} from "../domain/endpoints.ts";
import { EVENT_TYPE } from "../domain/payload.ts";
import { createDeliveryLog } from "./delivery-log.ts";
import { type EndpointDeps, endpointOf, requireWatchlist } from "./lookup.ts";

/** The subscription's events and URL are acceptable, or the request is refused field by field. */
async function checkSubscription(
  deps: EndpointDeps,
  input: { url: string; events: string[] },
): Promise<string[]> {
  const events = subscribableEvents(input.events);
  if (!events) {
    throw new ApiError("invalid_request", `events accepts only ${EVENT_TYPE}`, {
      fields: [{ path: "events", message: `only ${EVENT_TYPE} is allowed` }],
    });
  }
  const refusal = await refuseEndpointUrl(input.url, deps.policy);
  if (refusal) {
    throw new ApiError("invalid_request", refusal, {
      fields: [{ path: "url", message: refusal }],
    });
  }
  return events;
}

/**
 * A new endpoint with its first secret, which is returned this once; refused with nothing
 * created when the watchlist or the tenant already has as many endpoints as allowed. The count
 * and the insert run under the tenant's lock, so concurrent subscribes cannot pass the caps.
 */
async function createEndpoint(
  deps: EndpointDeps,
  caller: InternalCaller,
  watchlistId: string,
  input: { url: string; events: string[] },
): Promise<EndpointView & { secret: string }> {
  const events = await checkSubscription(deps, input);
  await requireWatchlist(deps, caller, watchlistId);
  const id = newEndpointId();
  return inTransaction(deps.pool, async (client) => {
    await lockTenantSubscribes(client, caller.tenantId);
    const existing = await countEndpoints(client, caller.tenantId, watchlistId);
    const full = endpointCapRefusal(existing, deps.limits, watchlistId);
    if (full) {
      throw new ApiError("conflict", full);
    }
    const createdAt = await insertEndpoint(client, {
      id,
      tenantId: caller.tenantId,
      watchlistId,
      url: input.url,
      events,
    });
    const secret = await deps.secrets.create(client, id);
    return {
      id,
      watchlist_id: watchlistId,
      url: input.url,
      events,
      created_at: (createdAt ?? new Date(deps.now())).toISOString(),
      secret,
    };
  });
}

async function removeEndpoint(
  deps: EndpointDeps,
  tenantId: string,
  watchlistId: string,
  endpointId: string,
): Promise<void> {
  await endpointOf(deps, tenantId, watchlistId, endpointId);
  await markEndpointRemoved(deps.pool, endpointId, new Date(deps.now()));
}

async function rotateSecret(
  deps: EndpointDeps,
  tenantId: string,
  watchlistId: string,
  endpointId: string,
) {
  const endpoint = await endpointOf(deps, tenantId, watchlistId, endpointId);
  const rotated = await inTransaction(deps.pool, (client) =>
    deps.secrets.rotate(client, endpointId),
  );
  // A read between the rotation and its commit still saw the old secrets; drop what it kept.
  deps.secrets.forget(endpointId);
  return {
    ...endpoint,
    secret: rotated.secret,
    previous_secret_expires_at: rotated.previousRetiresAt.toISOString(),
  };
}

/**
 * Every endpoint of the tenant gets a new secret and the old ones stop signing at once.
 * Idempotent: an endpoint whose signing secret is younger than the revocation is skipped (and
 * checked again under the endpoint's lock), so the several `key.revoked` events of one
 * compromise (and their redeliveries) rotate once. Returns how many endpoints were considered.
 */
async function rotateAfterCompromise(
  deps: EndpointDeps,
  tenantId: string,
  revokedAt: Date,
): Promise<number> {
  const ids = await selectEndpointsSignedBefore(
    deps.pool,
    tenantId,
    revokedAt,
    new Date(deps.now()),
  );
  for (const id of ids) {
    await inTransaction(deps.pool, async (client) => {
      await lockEndpoint(client, id);
      if (!(await hasSecretCreatedAfter(client, id, revokedAt))) {
        await deps.secrets.rotate(client, id);
      }
    });
    // A read between the rotation and its commit still saw the compromised secret.
    deps.secrets.forget(id);
  }
  return ids.length;
}

/** Endpoints, their secrets, the delivery log and replay, always within one tenant. */
export function createEndpointService(deps: EndpointDeps) {
  return {
    create: (
      caller: InternalCaller,
      watchlistId: string,
      input: { url: string; events: string[] },
    ) => createEndpoint(deps, caller, watchlistId, input),
    list: async (tenantId: string, watchlistId: string): Promise<EndpointView[]> =>
      (await selectEndpointsOf(deps.pool, tenantId, watchlistId)).map(endpointView),
    get: (tenantId: string, watchlistId: string, endpointId: string) =>
      endpointOf(deps, tenantId, watchlistId, endpointId),
    requireWatchlist: (caller: InternalCaller, watchlistId: string) =>
      requireWatchlist(deps, caller, watchlistId),
    /**
     * Every endpoint of a deleted watchlist: their queued deliveries are dead letters
     * (`endpoint_removed`) from the next claim on. Returns how many went.
     */
    removeAllOf: (tenantId: string, watchlistId: string) =>
      markEndpointsOfWatchlistRemoved(deps.pool, tenantId, watchlistId, new Date(deps.now())),
    remove: (tenantId: string, watchlistId: string, endpointId: string) =>
      removeEndpoint(deps, tenantId, watchlistId, endpointId),
    rotate: (tenantId: string, watchlistId: string, endpointId: string) =>
      rotateSecret(deps, tenantId, watchlistId, endpointId),
    rotateAfterCompromise: (tenantId: string, revokedAt: Date) =>
      rotateAfterCompromise(deps, tenantId, revokedAt),
    ...createDeliveryLog(deps),
  };
}

export type EndpointService = ReturnType<typeof createEndpointService>;
