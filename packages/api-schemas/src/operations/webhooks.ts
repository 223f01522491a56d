import { z } from "zod";
import { defineOperation } from "./operation.ts";

// Webhook endpoints and deliveries: owned by the webhook-dispatcher, which serves each under the
// same path prefixed with /internal. Colon actions (`{endpoint_id}:rotate`, `{delivery_id}:replay`,
// `deliveries:replay`) use a parameter pattern that stops at the colon, so Fastify matches them
// literally and the OpenAPI document shows the paths exactly as the specification writes them.

const base = "/v1/watchlists/:id/webhooks";
const owner = "webhook-dispatcher";
const tags = ["webhooks"];
const surface = "webhooks";
// Every webhook operation can be refused at the edge or find the dispatcher unavailable.
const edgeErrors = ["unauthorized", "tier_required", "rate_limited", "unavailable"] as const;

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

export type WebhookEndpoint = z.infer<typeof webhookEndpointSchema>;

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

export type WebhookDelivery = z.infer<typeof webhookDeliverySchema>;

const attemptSchema = z
  .object({
    replay_no: z.number().int(),
    attempt: z.number().int(),
    attempted_at: z.string(),
    duration_ms: z.number().int().nullable(),
    status_code: z.number().int().nullable(),
    failure: z.string().nullable(),
    error: z
      .string()
      .nullable()
      .describe(
        "A coarse reason (connection refused, tls handshake failed, …); nothing the receiver sent back is kept",
      ),
    state: z.string(),
  })
  .meta({ id: "WebhookAttempt" });

export type WebhookAttempt = z.infer<typeof attemptSchema>;

const deliveryDetailSchema = webhookDeliverySchema
  .extend({
    body: z
      .string()
      .nullable()
      .describe(
        "The exact bytes sent on every attempt, for a delivery that was charged (a copy of a lead already paid for). Null for one never charged (parked for quota, dead-lettered, not yet delivered): its payload holds lead data, shown by GET …/deliveries/{delivery_id}/body for one lead-view",
      ),
    attempts: z.array(attemptSchema),
  })
  .meta({ id: "WebhookDeliveryDetail" });

export const webhookDeliveryBodySchema = z
  .object({
    id: z.string().describe("The delivery's X-FLPF-Webhook-Id"),
    folio: z.string(),
    body: z.string().describe("The exact bytes sent (or to be sent) on every attempt"),
  })
  .meta({ id: "WebhookDeliveryBody" });

/** What the owner answers for a delivery's payload; the gateway decides whether it costs a view. */
export const webhookDeliveryBodyInternalSchema = webhookDeliveryBodySchema.extend({
  charged: z.boolean().describe("Whether a delivery of it was charged, so it was paid for"),
});

export const createWebhookEndpoint = defineOperation({
  operationId: "createWebhookEndpoint",
  method: "POST",
  path: base,
  internalPath: `/internal${base}`,
  owner,
  tags,
  surface,
  summary:
    "Subscribe an HTTPS endpoint to a watchlist's watchlist.match events; the whsec_ secret is in this response only",
  params: watchlistParams,
  body: z.strictObject({
    url: z
      .string()
      .min(1)
      .max(2048)
      .describe(
        "HTTPS to a public address: private, loopback, link-local, shared and reserved addresses, and IPv6 forms carrying them, are refused",
      ),
    events: z.array(z.string()).min(1).describe("Only watchlist.match"),
  }),
  responses: { 201: createdEndpointSchema },
  // conflict: the watchlist or the account already has as many endpoints as allowed.
  errors: [...edgeErrors, "not_found", "conflict"],
});

export const listWebhookEndpoints = defineOperation({
  operationId: "listWebhookEndpoints",
  method: "GET",
  path: base,
  internalPath: `/internal${base}`,
  owner,
  tags,
  surface,
  summary: "The watchlist's webhook endpoints (secrets are never shown)",
  params: watchlistParams,
  responses: { 200: z.object({ data: z.array(webhookEndpointSchema) }) },
  errors: edgeErrors,
});

export const getWebhookEndpoint = defineOperation({
  operationId: "getWebhookEndpoint",
  method: "GET",
  path: `${base}/:endpoint_id`,
  internalPath: `/internal${base}/:endpoint_id`,
  owner,
  tags,
  surface,
  summary: "One webhook endpoint (no secret)",
  params: endpointParams,
  responses: { 200: webhookEndpointSchema },
  errors: [...edgeErrors, "not_found"],
});

export const deleteWebhookEndpoint = defineOperation({
  operationId: "deleteWebhookEndpoint",
  method: "DELETE",
  path: `${base}/:endpoint_id`,
  internalPath: `/internal${base}/:endpoint_id`,
  owner,
  tags,
  surface,
  summary: "Unsubscribe; deliveries not yet sent are dead-lettered (endpoint_removed)",
  params: endpointParams,
  responses: { 204: z.null().describe("No content") },
  errors: [...edgeErrors, "not_found"],
});

export const rotateWebhookSecret = defineOperation({
  operationId: "rotateWebhookSecret",
  method: "POST",
  path: `${base}/:endpoint_id([^:/]+)::rotate`,
  internalPath: `/internal${base}/:endpoint_id([^:/]+)::rotate`,
  owner,
  tags,
  surface,
  summary:
    "New signing secret (shown once); the old one retires at once, so every delivery from now on is signed with the new secret only. Receivers accept both while they cut over",
  params: endpointParams,
  responses: { 200: rotatedEndpointSchema },
  errors: [...edgeErrors, "not_found"],
});

export const listWebhookDeliveries = defineOperation({
  operationId: "listWebhookDeliveries",
  method: "GET",
  path: `${base}/:endpoint_id/deliveries`,
  internalPath: `/internal${base}/:endpoint_id/deliveries`,
  owner,
  tags,
  surface,
  summary: "The endpoint's delivery log, newest first",
  params: endpointParams,
  querystring: z.object({
    state: z.enum(deliveryStates).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    cursor: z.string().max(512).optional(),
  }),
  responses: {
    200: z.object({
      data: z.array(webhookDeliverySchema),
      next_cursor: z.string().nullable(),
    }),
  },
  errors: [...edgeErrors, "not_found"],
});

export const getWebhookDelivery = defineOperation({
  operationId: "getWebhookDelivery",
  method: "GET",
  path: `${base}/:endpoint_id/deliveries/:delivery_id`,
  internalPath: `/internal${base}/:endpoint_id/deliveries/:delivery_id`,
  owner,
  tags,
  surface,
  summary:
    "One delivery with every attempt (status, latency, failure reason); its body only when the delivery was charged",
  params: deliveryParams,
  responses: { 200: deliveryDetailSchema },
  errors: [...edgeErrors, "not_found"],
});

export const getWebhookDeliveryBody = defineOperation({
  operationId: "getWebhookDeliveryBody",
  method: "GET",
  path: `${base}/:endpoint_id/deliveries/:delivery_id/body`,
  internalPath: `/internal${base}/:endpoint_id/deliveries/:delivery_id/body`,
  owner,
  tags,
  surface,
  summary:
    "A delivery's payload (it holds lead data): free for a delivery that was charged, otherwise a lead read of its parcel, one lead-view (free again the same UTC day), 402 when the month's views are spent",
  params: deliveryParams,
  responses: { 200: webhookDeliveryBodySchema },
  errors: [...edgeErrors, "not_found", "quota_exceeded"],
});

export const replayWebhookDelivery = defineOperation({
  operationId: "replayWebhookDelivery",
  method: "POST",
  path: `${base}/:endpoint_id/deliveries/:delivery_id([^:/]+)::replay`,
  internalPath: `/internal${base}/:endpoint_id/deliveries/:delivery_id([^:/]+)::replay`,
  owner,
  tags,
  surface,
  summary:
    "Replay a dead-lettered (or completed) delivery within its 30-day hold: same webhook id, same body, a new attempt",
  params: deliveryParams,
  responses: { 202: webhookDeliverySchema },
  errors: [...edgeErrors, "not_found", "conflict"],
});

export const replayWebhookDeadLetters = defineOperation({
  operationId: "replayWebhookDeadLetters",
  method: "POST",
  path: `${base}/:endpoint_id/deliveries::replay`,
  internalPath: `/internal${base}/:endpoint_id/deliveries::replay`,
  owner,
  tags,
  surface,
  summary:
    "Replay every dead letter of the endpoint dead-lettered since a time (and before `until`)",
  params: endpointParams,
  body: z.object({
    since: z.iso.datetime({ offset: true }).describe("RFC 3339; Z or an offset"),
    until: z.iso.datetime({ offset: true }).optional(),
  }),
  responses: {
    202: z.object({ replayed: z.number().int(), delivery_ids: z.array(z.string()) }),
  },
  errors: [...edgeErrors, "not_found"],
});

/** The webhook operations, in the order the gateway registers them. */
export const webhookOperations = [
  createWebhookEndpoint,
  listWebhookEndpoints,
  getWebhookEndpoint,
  deleteWebhookEndpoint,
  rotateWebhookSecret,
  listWebhookDeliveries,
  getWebhookDelivery,
  getWebhookDeliveryBody,
  replayWebhookDelivery,
  replayWebhookDeadLetters,
] as const;
