import {
  addMember,
  apiKeySchema,
  cancelSubscription,
  changeTier,
  confirmTrial,
  contactResponseSchema,
  contactSales,
  edgeTenantSchema,
  getAccount,
  issueApiKey,
  issuedApiKeySchema,
  listApiKeys,
  listMembers,
  memberSchema,
  removeMember,
  reportCompromise,
  requestSchemas,
  revokeApiKey,
  rotateDashboardApiKey,
  startTrial,
  startTrialResponseSchema,
  tenantSchema,
  trialActionSchema,
} from "@th/api-schemas";
import { ApiError, errorResponses, type HttpApp, internalCaller } from "@th/service-kit";
import { z } from "zod";
import type { Accounts } from "../db/accounts.ts";
import { registerInternalBillingRoutes } from "./internal-billing.ts";
import { registerInternalPasswordRoutes } from "./internal-passwords.ts";

const revokedSchema = z.object({ key_hashes: z.array(z.string()) });

const contactRequestsSchema = z.object({
  contact_requests: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      email: z.string(),
      company: z.string().nullable(),
      message: z.string(),
      received_at: z.string(),
    }),
  ),
});

/**
 * The keys service's internal API. The gateway authenticates the caller and forwards; these
 * routes enforce what only this service knows: roles, seats, ownership of keys. A route behind a
 * public operation binds to its entry in the operation table (`@th/api-schemas`): its internal
 * path and request schemas. Where the gateway does more than relay the answer (a revocation
 * names the key hashes it refuses at the edge), the internal answer has a shape of its own.
 */
export function registerInternalAccountRoutes(app: HttpApp, accounts: Accounts): void {
  registerSignUpRoutes(app, accounts);
  registerKeyRoutes(app, accounts);
  registerMemberRoutes(app, accounts);
  registerSubscriptionRoutes(app, accounts);
  registerInternalPasswordRoutes(app, accounts);
  registerInternalBillingRoutes(app, accounts);
}

/** The public site's forms: a trial and a contact message. */
function registerSignUpRoutes(app: HttpApp, accounts: Accounts): void {
  app.post(
    startTrial.internalPath,
    {
      schema: {
        ...requestSchemas(startTrial),
        response: {
          201: startTrialResponseSchema,
          202: trialActionSchema,
          ...errorResponses("payment_declined", "conflict", "unavailable"),
        },
      },
    },
    async (request, reply) => {
      const started = await accounts.startTrial(request.body);
      // 202: the card asks for 3-D Secure, and the browser completes it (decision 0364).
      return reply.status("client_secret" in started ? 202 : 201).send(started);
    },
  );

  app.post(
    confirmTrial.internalPath,
    {
      schema: {
        ...requestSchemas(confirmTrial),
        response: {
          201: startTrialResponseSchema,
          ...errorResponses("not_found", "payment_declined", "conflict", "unavailable"),
        },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await accounts.confirmTrial(request.body.client_secret)),
  );

  app.post(
    contactSales.internalPath,
    {
      schema: {
        ...requestSchemas(contactSales),
        response: { 202: contactResponseSchema, ...errorResponses() },
      },
    },
    async (request, reply) => reply.status(202).send(await accounts.recordContact(request.body)),
  );

  // The operators' read of the contact form: the messages are kept to be answered.
  app.get(
    "/internal/v1/operator/contact-requests",
    {
      schema: {
        querystring: z.object({ limit: z.coerce.number().int().min(1).max(500).default(50) }),
        response: { 200: contactRequestsSchema, ...errorResponses() },
      },
    },
    async (request) => ({ contact_requests: await accounts.listContacts(request.query.limit) }),
  );
}

/** API keys: the gateway's lookup by hash, and admins' listing, issuing and revoking. */
function registerKeyRoutes(app: HttpApp, accounts: Accounts): void {
  app.get(
    "/internal/v1/keys/by-hash/:key_hash",
    {
      schema: {
        params: z.object({ key_hash: z.string().regex(/^[0-9a-f]{64}$/) }),
        response: {
          200: z.object({
            key_id: z.string(),
            tenant_id: z.string(),
            member_id: z.string(),
            revoked: z.boolean(),
            tenant: edgeTenantSchema,
          }),
          ...errorResponses("not_found"),
        },
      },
    },
    async (request) => {
      const found = await accounts.lookupKey(request.params.key_hash);
      if (!found) {
        throw new ApiError("not_found", "unknown key");
      }
      return found;
    },
  );

  // The gateway found this key under an older pepper: it sends the key, whose hash under the
  // current pepper is made here (decision 0345).
  app.post(
    "/internal/v1/keys/rehash",
    {
      schema: {
        body: z.strictObject({
          key: z.string().regex(/^th_live_[0-9A-Za-z]{38}$/),
          /** The pepper version the gateway holds current; nothing moves unless it is ours. */
          pepper_version: z.number().int().min(1),
        }),
        response: {
          200: z.object({ key_hash: z.string(), pepper_version: z.number().int() }),
          ...errorResponses("not_found", "conflict"),
        },
      },
    },
    async (request) => {
      const moved = await accounts.rehashKey(request.body.key, request.body.pepper_version);
      if (!moved) {
        throw new ApiError("not_found", "no key under an older pepper");
      }
      return moved;
    },
  );

  app.get(
    listApiKeys.internalPath,
    {
      schema: {
        ...requestSchemas(listApiKeys),
        response: {
          200: z.object({ data: z.array(apiKeySchema) }),
          ...errorResponses("forbidden"),
        },
      },
    },
    async (request) => ({ data: await accounts.listKeys(internalCaller(request)) }),
  );

  app.post(
    issueApiKey.internalPath,
    {
      schema: {
        ...requestSchemas(issueApiKey),
        response: { 201: issuedApiKeySchema, ...errorResponses("forbidden") },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await accounts.issueKey(internalCaller(request), request.body.label)),
  );

  // The dashboard's two-step rotation: a replacement is issued; the old key is revoked later.
  app.post(
    rotateDashboardApiKey.internalPath,
    {
      schema: {
        ...requestSchemas(rotateDashboardApiKey),
        response: {
          201: issuedApiKeySchema,
          ...errorResponses("forbidden", "not_found", "conflict"),
        },
      },
    },
    async (request, reply) =>
      reply
        .status(201)
        .send(await accounts.rotateKey(internalCaller(request), request.params.key_id)),
  );

  app.delete(
    revokeApiKey.internalPath,
    {
      schema: {
        ...requestSchemas(revokeApiKey),
        response: { 200: revokedSchema, ...errorResponses("forbidden", "not_found") },
      },
    },
    async (request) => {
      const { keyHash } = await accounts.revokeKey(internalCaller(request), request.params.key_id);
      return { key_hashes: [keyHash] };
    },
  );

  app.post(
    reportCompromise.internalPath,
    {
      schema: {
        ...requestSchemas(reportCompromise),
        response: {
          200: z.object({
            revoked_key_ids: z.array(z.string()),
            key_hashes: z.array(z.string()),
            api_key: issuedApiKeySchema,
          }),
          ...errorResponses("forbidden"),
        },
      },
    },
    async (request) => {
      const result = await accounts.revokeAllForCompromise(internalCaller(request));
      return {
        revoked_key_ids: result.revokedKeyIds,
        key_hashes: result.revokedKeyHashes,
        api_key: result.apiKey,
      };
    },
  );
}

/** The team: listing, adding within the seats, removing. */
function registerMemberRoutes(app: HttpApp, accounts: Accounts): void {
  app.get(
    listMembers.internalPath,
    {
      schema: {
        ...requestSchemas(listMembers),
        response: { 200: z.object({ data: z.array(memberSchema) }) },
      },
    },
    async (request) => ({ data: await accounts.listMembers(internalCaller(request)) }),
  );

  app.post(
    addMember.internalPath,
    {
      schema: {
        ...requestSchemas(addMember),
        response: {
          201: memberSchema,
          ...errorResponses("forbidden", "seat_limit_reached", "conflict"),
        },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await accounts.addMember(internalCaller(request), request.body)),
  );

  app.delete(
    removeMember.internalPath,
    {
      schema: {
        ...requestSchemas(removeMember),
        response: { 200: revokedSchema, ...errorResponses("forbidden", "not_found", "conflict") },
      },
    },
    async (request) => {
      const result = await accounts.removeMember(
        internalCaller(request),
        request.params.member_id,
        {
          revokeKeys: request.query.revoke_keys === "true",
        },
      );
      return { key_hashes: result.revokedKeyHashes };
    },
  );
}

/** The subscription: the tenant, its tier, an operator's negotiated caps, cancellation. */
function registerSubscriptionRoutes(app: HttpApp, accounts: Accounts): void {
  app.get(
    getAccount.internalPath,
    { schema: { ...requestSchemas(getAccount), response: { 200: tenantSchema } } },
    async (request) => accounts.getTenant(internalCaller(request)),
  );

  app.post(
    changeTier.internalPath,
    {
      schema: {
        ...requestSchemas(changeTier),
        response: {
          200: tenantSchema,
          ...errorResponses("forbidden", "seat_limit_reached", "conflict"),
        },
      },
    },
    async (request) => accounts.changeTier(internalCaller(request), request.body.tier),
  );

  app.put(
    "/internal/v1/operator/tenants/:tenant_id/limits",
    {
      schema: {
        params: z.object({ tenant_id: z.string().min(1).max(64) }),
        body: z
          .object({
            lead_views_per_month: z.number().int().min(1).optional(),
            rate_per_minute: z.number().int().min(1).optional(),
            concurrent_webhooks: z.number().int().min(0).optional(),
            seats: z.number().int().min(1).optional(),
          })
          .strict(),
        response: { 200: tenantSchema, ...errorResponses("not_found", "conflict") },
      },
    },
    async (request) => accounts.setCustomLimits(request.params.tenant_id, request.body),
  );

  app.post(
    cancelSubscription.internalPath,
    {
      schema: {
        ...requestSchemas(cancelSubscription),
        response: { 200: tenantSchema, ...errorResponses("forbidden") },
      },
    },
    async (request) => accounts.cancel(internalCaller(request)),
  );
}
