import { type HttpApp, internalCaller } from "@th/service-kit";
import { z } from "zod";
import type { EndpointService } from "../endpoints/service.ts";

const base = "/internal/v1/watchlists/:id/webhooks";
const watchlistParams = z.object({ id: z.string().min(1).max(128) });
const endpointParams = watchlistParams.extend({ endpoint_id: z.string().min(1).max(64) });
const deliveryParams = endpointParams.extend({ delivery_id: z.string().min(1).max(64) });
const STATES = ["pending", "retrying", "exhausted", "parked", "complete", "dead_letter"] as const;

/**
 * The internal API behind the gateway's `/v1/watchlists/{id}/webhooks…` routes. The gateway has
 * authenticated the key and checked the tier; the tenant arrives in `x-th-tenant-id`. Paths with
 * a colon action (`{endpoint_id}:rotate`, `{delivery_id}:replay`, `deliveries:replay`) use a
 * parameter pattern that stops at the colon, so the action is a literal suffix.
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
    base,
    {
      schema: {
        params: watchlistParams,
        body: z.strictObject({
          url: z.string().min(1).max(2048),
          events: z.array(z.string()).min(1),
        }),
      },
    },
    async (request, reply) => {
      const caller = internalCaller(request);
      const created = await endpoints.create(caller, request.params.id, request.body);
      return reply.status(201).send(created);
    },
  );

  // The gateway calls this once it has deleted the watchlist, so no delivery outlives it.
  app.delete(base, { schema: { params: watchlistParams } }, async (request) => ({
    removed: await endpoints.removeAllOf(internalCaller(request).tenantId, request.params.id),
  }));

  app.get(base, { schema: { params: watchlistParams } }, async (request) => ({
    data: await endpoints.list(internalCaller(request).tenantId, request.params.id),
  }));

  app.get(`${base}/:endpoint_id`, { schema: { params: endpointParams } }, async (request) =>
    endpoints.get(internalCaller(request).tenantId, request.params.id, request.params.endpoint_id),
  );

  app.delete(
    `${base}/:endpoint_id`,
    { schema: { params: endpointParams } },
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
    `${base}/:endpoint_id([^:/]+)::rotate`,
    { schema: { params: endpointParams } },
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
    `${base}/:endpoint_id/deliveries`,
    {
      schema: {
        params: endpointParams,
        querystring: z.object({
          state: z.enum(STATES).optional(),
          limit: z.coerce.number().int().min(1).max(200).default(50),
          cursor: z.string().max(512).optional(),
        }),
      },
    },
    async (request) =>
      endpoints.deliveries(
        internalCaller(request).tenantId,
        request.params.id,
        request.params.endpoint_id,
        request.query,
      ),
  );

  app.get(
    `${base}/:endpoint_id/deliveries/:delivery_id`,
    { schema: { params: deliveryParams } },
    async (request) =>
      endpoints.delivery(
        internalCaller(request).tenantId,
        request.params.id,
        request.params.endpoint_id,
        request.params.delivery_id,
      ),
  );

  app.post(
    `${base}/:endpoint_id/deliveries/:delivery_id([^:/]+)::replay`,
    { schema: { params: deliveryParams } },
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
    `${base}/:endpoint_id/deliveries::replay`,
    {
      schema: {
        params: endpointParams,
        body: z
          .object({
            since: z.iso.datetime({ offset: true }),
            until: z.iso.datetime({ offset: true }).optional(),
          })
          .refine(
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
