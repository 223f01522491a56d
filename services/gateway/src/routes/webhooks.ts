import { errorResponses, type HttpApp, type InternalClient } from "@th/service-kit";
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { callAs, relay } from "./forward.ts";

// Webhook endpoints and deliveries: owned by the webhook-dispatcher, reached through its internal
// API as the authenticated caller. The `webhooks` surface gate answers 403 with `upgrade_url` on
// Starter. Colon actions (`{endpoint_id}:rotate`, `{delivery_id}:replay`, `deliveries:replay`)
// use a parameter pattern that stops at the colon, so Fastify matches them literally and the
// OpenAPI document shows the paths exactly as the specification writes them.

const webhooks = { edge: { surface: "webhooks" as const } };
const tags = ["webhooks"];
const security = [{ bearerAuth: [] }];
const errors = (...extra: Parameters<typeof errorResponses>) =>
  errorResponses("unauthorized", "tier_required", "rate_limited", "unavailable", ...extra);

const watchlistParams = z.object({ id: z.string().min(1).max(128) });
const endpointParams = watchlistParams.extend({ endpoint_id: z.string().min(1).max(64) });
const deliveryParams = endpointParams.extend({ delivery_id: z.string().min(1).max(64) });

export const webhookEndpointSchema = z
  .object({
    id: z.string(),
    watchlist_id: z.string(),
    url: z.string().describe("HTTPS URL that receives deliveries"),
    events: z.array(z.string()),
    created_at: z.string(),
  })
  .meta({ id: "WebhookEndpoint" });

const createdEndpointSchema = webhookEndpointSchema
  .extend({
    secret: z
      .string()
      .describe("Signing secret (whsec_…); shown in this response only, never retrievable again"),
  })
  .meta({ id: "WebhookEndpointWithSecret" });

const rotatedEndpointSchema = createdEndpointSchema
  .extend({
    previous_secret_expires_at: z
      .string()
      .describe(
        "When the old secret stopped signing: the moment of the rotation. From then on every delivery carries exactly one v1= signature, under the new secret; a receiver accepts both secrets while it cuts over (docs/webhooks.md)",
      ),
  })
  .meta({ id: "RotatedWebhookEndpoint" });

const deliveryStates = [
  "pending",
  "retrying",
  "exhausted",
  "parked",
  "complete",
  "dead_letter",
] as const;

export const webhookDeliverySchema = z
  .object({
    id: z.string().describe("The X-FLPF-Webhook-Id, the same on every attempt and replay"),
    endpoint_id: z.string(),
    watchlist_id: z.string(),
    match_id: z.string(),
    folio: z.string(),
    event_type: z.string(),
    state: z
      .enum(deliveryStates)
      .describe(
        "pending/retrying: attempts remain; exhausted: 5th attempt failed, dead-lettered 30 min later; parked: waiting for quota, tier or tenant; complete; dead_letter: held 30 days, replayable",
      ),
    parked_reason: z.string().nullable(),
    attempts: z.number().int(),
    replay_no: z.number().int(),
    next_attempt_at: z.string().nullable(),
    first_attempted_at: z.string().nullable(),
    last_attempted_at: z.string().nullable(),
    last_status_code: z.number().int().nullable(),
    last_failure: z.string().nullable(),
    last_error: z.string().nullable(),
    completed_at: z.string().nullable(),
    dead_lettered_at: z.string().nullable(),
    dead_letter_reason: z.string().nullable(),
    hold_until: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: "WebhookDelivery" });

const attemptSchema = z
  .object({
    replay_no: z.number().int(),
    attempt: z.number().int(),
    attempted_at: z.string(),
    duration_ms: z.number().int().nullable(),
    status_code: z.number().int().nullable(),
    failure: z.string().nullable(),
    error: z.string().nullable(),
    response_excerpt: z.string().nullable(),
    state: z.string(),
  })
  .meta({ id: "WebhookAttempt" });

const deliveryDetailSchema = webhookDeliverySchema
  .extend({
    body: z.string().describe("The exact bytes sent on every attempt"),
    attempts: z.array(attemptSchema),
  })
  .meta({ id: "WebhookDeliveryDetail" });

export function registerWebhookRoutes(app: HttpApp, deps: { dispatcher: InternalClient }): void {
  const base = "/v1/watchlists/:id/webhooks";
  // The dispatcher serves the same paths (query string included) under /internal.
  const internal = (url: string) => `/internal${url}`;
  const forward =
    (method: string, withBody = false) =>
    async (request: FastifyRequest, reply: FastifyReply) =>
      relay(
        reply,
        await callAs(
          deps.dispatcher,
          request,
          method,
          internal(request.url),
          withBody ? request.body : undefined,
        ),
      );

  app.post(
    base,
    {
      config: webhooks,
      schema: {
        tags,
        security,
        operationId: "createWebhookEndpoint",
        summary:
          "Subscribe an HTTPS endpoint to a watchlist's watchlist.match events; the whsec_ secret is in this response only",
        params: watchlistParams,
        body: z.strictObject({
          url: z
            .string()
            .min(1)
            .max(2048)
            .describe("HTTPS; private, loopback and link-local addresses are refused"),
          events: z.array(z.string()).min(1).describe("Only watchlist.match"),
        }),
        response: { 201: createdEndpointSchema, ...errors("not_found") },
      },
    },
    forward("POST", true),
  );

  app.get(
    base,
    {
      config: webhooks,
      schema: {
        tags,
        security,
        operationId: "listWebhookEndpoints",
        summary: "The watchlist's webhook endpoints (secrets are never shown)",
        params: watchlistParams,
        response: { 200: z.object({ data: z.array(webhookEndpointSchema) }), ...errors() },
      },
    },
    forward("GET"),
  );

  app.get(
    `${base}/:endpoint_id`,
    {
      config: webhooks,
      schema: {
        tags,
        security,
        operationId: "getWebhookEndpoint",
        summary: "One webhook endpoint (no secret)",
        params: endpointParams,
        response: { 200: webhookEndpointSchema, ...errors("not_found") },
      },
    },
    forward("GET"),
  );

  app.delete(
    `${base}/:endpoint_id`,
    {
      config: webhooks,
      schema: {
        tags,
        security,
        operationId: "deleteWebhookEndpoint",
        summary: "Unsubscribe; deliveries not yet sent are dead-lettered (endpoint_removed)",
        params: endpointParams,
        response: { 204: z.null().describe("No content"), ...errors("not_found") },
      },
    },
    async (request, reply) => {
      const upstream = await callAs(deps.dispatcher, request, "DELETE", internal(request.url));
      return upstream.status === 204 ? reply.status(204).send(null) : relay(reply, upstream);
    },
  );

  app.post(
    `${base}/:endpoint_id([^:/]+)::rotate`,
    {
      config: webhooks,
      schema: {
        tags,
        security,
        operationId: "rotateWebhookSecret",
        summary:
          "New signing secret (shown once); the old one keeps signing alongside it for 24 h, then retires",
        params: endpointParams,
        response: { 200: rotatedEndpointSchema, ...errors("not_found") },
      },
    },
    forward("POST"),
  );

  app.get(
    `${base}/:endpoint_id/deliveries`,
    {
      config: webhooks,
      schema: {
        tags,
        security,
        operationId: "listWebhookDeliveries",
        summary: "The endpoint's delivery log, newest first",
        params: endpointParams,
        querystring: z.object({
          state: z.enum(deliveryStates).optional(),
          limit: z.coerce.number().int().min(1).max(200).default(50),
          cursor: z.string().max(512).optional(),
        }),
        response: {
          200: z.object({
            data: z.array(webhookDeliverySchema),
            next_cursor: z.string().nullable(),
          }),
          ...errors("not_found"),
        },
      },
    },
    forward("GET"),
  );

  app.get(
    `${base}/:endpoint_id/deliveries/:delivery_id`,
    {
      config: webhooks,
      schema: {
        tags,
        security,
        operationId: "getWebhookDelivery",
        summary: "One delivery with its body and every attempt (status, latency, response excerpt)",
        params: deliveryParams,
        response: { 200: deliveryDetailSchema, ...errors("not_found") },
      },
    },
    forward("GET"),
  );

  app.post(
    `${base}/:endpoint_id/deliveries/:delivery_id([^:/]+)::replay`,
    {
      config: webhooks,
      schema: {
        tags,
        security,
        operationId: "replayWebhookDelivery",
        summary:
          "Replay a dead-lettered (or completed) delivery within its 30-day hold: same webhook id, same body, a new attempt",
        params: deliveryParams,
        response: { 202: webhookDeliverySchema, ...errors("not_found", "conflict") },
      },
    },
    forward("POST"),
  );

  app.post(
    `${base}/:endpoint_id/deliveries::replay`,
    {
      config: webhooks,
      schema: {
        tags,
        security,
        operationId: "replayWebhookDeadLetters",
        summary:
          "Replay every dead letter of the endpoint dead-lettered since a time (and before `until`)",
        params: endpointParams,
        body: z.object({
          since: z.iso.datetime({ offset: true }).describe("RFC 3339; Z or an offset"),
          until: z.iso.datetime({ offset: true }).optional(),
        }),
        response: {
          202: z.object({ replayed: z.number().int(), delivery_ids: z.array(z.string()) }),
          ...errors("not_found"),
        },
      },
    },
    forward("POST", true),
  );
}
