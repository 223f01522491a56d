import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  getWebhookDelivery,
  getWebhookDeliveryBody,
  getWebhookEndpoint,
  listWebhookDeliveries,
  listWebhookEndpoints,
  replayWebhookDeadLetters,
  replayWebhookDelivery,
  requestSchemas,
  rotateWebhookSecret,
} from "@th/api-schemas";
import { type HttpApp, internalCaller } from "@th/service-kit";
import type { EndpointService } from "../endpoints/service.ts";

const base = listWebhookEndpoints.internalPath;

/**
 * The internal API behind the gateway's `/v1/watchlists/{id}/webhooks…` routes: each route binds
 * to its operation in the public table (`@th/api-schemas`), at its internal path with its request
 * schemas. The gateway has authenticated the key and checked the tier; the tenant arrives in
 * `x-th-tenant-id`.
 */
export function registerWebhookRoutes(app: HttpApp, endpoints: EndpointService): void {
  requireWatchlistFirst(app, endpoints);
  registerEndpointRoutes(app, endpoints);
  registerDeliveryRoutes(app, endpoints);
}

function requireWatchlistFirst(app: HttpApp, endpoints: EndpointService): void {
  // Every call but the subscribe (which checks it with the rest of its input) and the delete
  // first asks whether the watchlist still exists: an endpoint can always be removed, which is
  // what stops the deliveries still queued for it.
  app.addHook("preHandler", async (request) => {
    const route = request.routeOptions.url;
    if (
      !route?.startsWith(base) ||
      (request.method === "POST" && route === base) ||
      request.method === "DELETE"
    ) {
      return;
    }
    await endpoints.requireWatchlist(
      internalCaller(request),
      (request.params as { id: string }).id,
    );
  });
}

/** Subscribe, list, read, remove and rotate endpoints. */
function registerEndpointRoutes(app: HttpApp, endpoints: EndpointService): void {
  app.post(
    createWebhookEndpoint.internalPath,
    { schema: requestSchemas(createWebhookEndpoint) },
    async (request, reply) => {
      const caller = internalCaller(request);
      const created = await endpoints.create(caller, request.params.id, request.body);
      return reply.status(201).send(created);
    },
  );

  // The gateway calls this once it has deleted the watchlist, so no delivery outlives it.
  app.delete(base, { schema: { params: listWebhookEndpoints.params } }, async (request) => ({
    removed: await endpoints.removeAllOf(internalCaller(request).tenantId, request.params.id),
  }));

  app.get(base, { schema: requestSchemas(listWebhookEndpoints) }, async (request) => ({
    data: await endpoints.list(internalCaller(request).tenantId, request.params.id),
  }));

  app.get(
    getWebhookEndpoint.internalPath,
    { schema: requestSchemas(getWebhookEndpoint) },
    async (request) =>
      endpoints.get(
        internalCaller(request).tenantId,
        request.params.id,
        request.params.endpoint_id,
      ),
  );

  app.delete(
    deleteWebhookEndpoint.internalPath,
    { schema: requestSchemas(deleteWebhookEndpoint) },
    async (request, reply) => {
      await endpoints.remove(
        internalCaller(request).tenantId,
        request.params.id,
        request.params.endpoint_id,
      );
      return reply.status(204).send();
    },
  );

  app.post(
    rotateWebhookSecret.internalPath,
    { schema: requestSchemas(rotateWebhookSecret) },
    async (request) =>
      endpoints.rotate(
        internalCaller(request).tenantId,
        request.params.id,
        request.params.endpoint_id,
      ),
  );
}

/** An endpoint's delivery log and replay. */
function registerDeliveryRoutes(app: HttpApp, endpoints: EndpointService): void {
  app.get(
    listWebhookDeliveries.internalPath,
    { schema: requestSchemas(listWebhookDeliveries) },
    async (request) =>
      endpoints.deliveries(
        internalCaller(request).tenantId,
        request.params.id,
        request.params.endpoint_id,
        request.query,
      ),
  );

  app.get(
    getWebhookDelivery.internalPath,
    { schema: requestSchemas(getWebhookDelivery) },
    async (request) =>
      endpoints.delivery(
        internalCaller(request).tenantId,
        request.params.id,
        request.params.endpoint_id,
        request.params.delivery_id,
      ),
  );

  app.get(
    getWebhookDeliveryBody.internalPath,
    { schema: requestSchemas(getWebhookDeliveryBody) },
    async (request) =>
      endpoints.deliveryBody(
        internalCaller(request).tenantId,
        request.params.id,
        request.params.endpoint_id,
        request.params.delivery_id,
      ),
  );

  app.post(
    replayWebhookDelivery.internalPath,
    { schema: requestSchemas(replayWebhookDelivery) },
    async (request, reply) =>
      reply
        .status(202)
        .send(
          await endpoints.replay(
            internalCaller(request).tenantId,
            request.params.id,
            request.params.endpoint_id,
            request.params.delivery_id,
          ),
        ),
  );

  app.post(
    replayWebhookDeadLetters.internalPath,
    {
      schema: {
        ...requestSchemas(replayWebhookDeadLetters),
        // Only the owner refuses a window that ends before it starts.
        body: replayWebhookDeadLetters.body.refine(
          (window) =>
            window.until === undefined || Date.parse(window.until) > Date.parse(window.since),
          {
            message: "must be later than since",
            path: ["until"],
          },
        ),
      },
    },
    async (request, reply) =>
      reply
        .status(202)
        .send(
          await endpoints.replayDeadLetters(
            internalCaller(request).tenantId,
            request.params.id,
            request.params.endpoint_id,
            request.body,
          ),
        ),
  );
}
