// An endpoint's delivery log as the API shows it, and replay of what it holds.
import { inTransaction } from "@th/db";
import { ApiError } from "@th/service-kit";
import {
  type DeliveryKey,
  replayDeadLetters,
  replayDelivery,
  selectAttempts,
  selectDelivery,
  selectDeliveryPage,
  selectDeliveryState,
} from "../db/delivery-log.ts";
import {
  attemptView,
  type DeliveryCursor,
  type DeliveryView,
  deliveryCursorOf,
  deliveryPage,
  deliveryView,
  isDeliveryId,
  paidBody,
} from "../domain/delivery-log.ts";
import { type EndpointDeps, endpointOf } from "./lookup.ts";

interface DeliveryQuery {
  state?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

function cursorOf(query: DeliveryQuery): DeliveryCursor | null {
  if (!query.cursor) {
    return null;
  }
  const after = deliveryCursorOf(query.cursor);
  if (!after) {
    throw new ApiError("invalid_request", "cursor is not one this API issued", {
      fields: [{ path: "querystring.cursor", message: "is not a cursor this API issued" }],
    });
  }
  return after;
}

async function deliveries(
  deps: EndpointDeps,
  tenantId: string,
  watchlistId: string,
  endpointId: string,
  query: DeliveryQuery,
): Promise<{ data: DeliveryView[]; next_cursor: string | null }> {
  await endpointOf(deps, tenantId, watchlistId, endpointId);
  const after = cursorOf(query);
  const rows = await selectDeliveryPage(
    deps.pool,
    { endpointId, tenantId, state: query.state ?? null, after },
    query.limit + 1,
  );
  return deliveryPage(rows, query.limit);
}

/** The endpoint's delivery, found or refused as not found before any replay or read. */
async function deliveryKeyOf(
  deps: EndpointDeps,
  tenantId: string,
  watchlistId: string,
  endpointId: string,
  deliveryId: string,
): Promise<DeliveryKey> {
  await endpointOf(deps, tenantId, watchlistId, endpointId);
  if (!isDeliveryId(deliveryId)) {
    throw new ApiError("not_found", `no delivery ${deliveryId}`);
  }
  return { deliveryId, endpointId, tenantId };
}

async function storedDelivery(
  deps: EndpointDeps,
  tenantId: string,
  watchlistId: string,
  endpointId: string,
  deliveryId: string,
) {
  const key = await deliveryKeyOf(deps, tenantId, watchlistId, endpointId, deliveryId);
  const row = await selectDelivery(deps.pool, key);
  if (!row) {
    throw new ApiError("not_found", `no delivery ${deliveryId}`);
  }
  return row;
}

/** The delivery's state, timing and attempts; its payload only when it was paid for. */
async function delivery(
  deps: EndpointDeps,
  tenantId: string,
  watchlistId: string,
  endpointId: string,
  deliveryId: string,
) {
  const row = await storedDelivery(deps, tenantId, watchlistId, endpointId, deliveryId);
  const attempts = await selectAttempts(deps.pool, deliveryId);
  return { ...deliveryView(row), body: paidBody(row), attempts: attempts.map(attemptView) };
}

/**
 * The delivery's payload, and whether it was paid for: the gateway charges a lead-view for its
 * parcel when it was not before answering.
 */
async function deliveryBody(
  deps: EndpointDeps,
  tenantId: string,
  watchlistId: string,
  endpointId: string,
  deliveryId: string,
) {
  const row = await storedDelivery(deps, tenantId, watchlistId, endpointId, deliveryId);
  return { id: row.id, folio: row.folio, body: row.body, charged: paidBody(row) !== null };
}

/**
 * A new attempt of a dead-lettered (or completed) delivery within its 30-day hold: same
 * webhook id, same body, the next replay number, the retry schedule from the start.
 */
async function replay(
  deps: EndpointDeps,
  tenantId: string,
  watchlistId: string,
  endpointId: string,
  deliveryId: string,
): Promise<DeliveryView> {
  const key = await deliveryKeyOf(deps, tenantId, watchlistId, endpointId, deliveryId);
  const replayed = await inTransaction(deps.pool, (client) =>
    replayDelivery(client, key, new Date(deps.now())),
  );
  if (!replayed) {
    const exists = await selectDeliveryState(deps.pool, key);
    if (!exists) {
      throw new ApiError("not_found", `no delivery ${deliveryId}`);
    }
    throw new ApiError(
      "conflict",
      `delivery ${deliveryId} is ${exists.state}; only dead-lettered or completed deliveries within their 30-day hold can be replayed`,
    );
  }
  deps.wake();
  return deliveryView(replayed);
}

/** Replays the endpoint's dead letters dead-lettered in [since, until). */
async function replayDeadLettersOf(
  deps: EndpointDeps,
  tenantId: string,
  watchlistId: string,
  endpointId: string,
  range: { since: string; until?: string | undefined },
): Promise<{ replayed: number; delivery_ids: string[] }> {
  await endpointOf(deps, tenantId, watchlistId, endpointId);
  const window = {
    since: new Date(range.since),
    until: range.until ? new Date(range.until) : null,
  };
  const replayed = await inTransaction(deps.pool, (client) =>
    replayDeadLetters(client, { endpointId, tenantId }, window, new Date(deps.now())),
  );
  if (replayed.length > 0) {
    deps.wake();
  }
  return { replayed: replayed.length, delivery_ids: replayed.map((row) => row.id) };
}

/** The delivery-log half of the endpoint service. */
export function createDeliveryLog(deps: EndpointDeps) {
  return {
    deliveries: (tenantId: string, watchlistId: string, endpointId: string, query: DeliveryQuery) =>
      deliveries(deps, tenantId, watchlistId, endpointId, query),
    delivery: (tenantId: string, watchlistId: string, endpointId: string, deliveryId: string) =>
      delivery(deps, tenantId, watchlistId, endpointId, deliveryId),
    deliveryBody: (tenantId: string, watchlistId: string, endpointId: string, deliveryId: string) =>
      deliveryBody(deps, tenantId, watchlistId, endpointId, deliveryId),
    replay: (tenantId: string, watchlistId: string, endpointId: string, deliveryId: string) =>
      replay(deps, tenantId, watchlistId, endpointId, deliveryId),
    replayDeadLetters: (
      tenantId: string,
      watchlistId: string,
      endpointId: string,
      range: { since: string; until?: string | undefined },
    ) => replayDeadLettersOf(deps, tenantId, watchlistId, endpointId, range),
  };
}
