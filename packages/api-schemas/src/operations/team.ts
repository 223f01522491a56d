import { z } from "zod";
import { billingSchema } from "../billing.ts";
import {
  addMemberBodySchema,
  apiKeySchema,
  changeTierBodySchema,
  compromiseResponseSchema,
  issueApiKeyBodySchema,
  issuedApiKeySchema,
  memberSchema,
  removeMemberQuerySchema,
  tenantSchema,
} from "../team.ts";
import { defineOperation } from "./operation.ts";

// The management API (keys and members of the caller's tenant, for Team and Custom admins) and
// the tenant's own subscription (open on every tier, so a Starter tenant can upgrade): all owned
// by the keys service.

const owner = "keys";
const management = { tags: ["team"], surface: "management" } as const;
const noContent = z.null().describe("No content");

export const issueApiKey = defineOperation({
  operationId: "issueApiKey",
  method: "POST",
  path: "/v1/team/api-keys",
  internalPath: "/internal/v1/api-keys",
  owner,
  ...management,
  summary: "Issue an API key; its secret is in this response only",
  body: issueApiKeyBodySchema,
  responses: { 201: issuedApiKeySchema },
  errors: ["unauthorized", "forbidden", "tier_required", "rate_limited"],
});

export const listApiKeys = defineOperation({
  operationId: "listApiKeys",
  method: "GET",
  path: "/v1/team/api-keys",
  internalPath: "/internal/v1/api-keys",
  owner,
  ...management,
  summary: "List the tenant's API keys with their age; secrets are never shown",
  responses: { 200: z.object({ data: z.array(apiKeySchema) }) },
  errors: ["unauthorized", "forbidden", "tier_required", "rate_limited"],
});

export const revokeApiKey = defineOperation({
  operationId: "revokeApiKey",
  method: "DELETE",
  path: "/v1/team/api-keys/:key_id",
  internalPath: "/internal/v1/api-keys/:key_id",
  owner,
  ...management,
  summary: "Revoke a key at once; the next request with it gets 401",
  params: z.object({ key_id: z.string().min(1).max(64) }),
  responses: { 204: noContent },
  errors: ["unauthorized", "forbidden", "tier_required", "not_found", "rate_limited"],
});

export const reportCompromise = defineOperation({
  operationId: "reportCompromise",
  method: "POST",
  path: "/v1/team/security/compromise",
  internalPath: "/internal/v1/api-keys/revoke-all",
  owner,
  ...management,
  summary:
    "Suspected compromise: revoke every active key, rotate every webhook signing secret, and issue a fresh key",
  responses: { 200: compromiseResponseSchema },
  errors: ["unauthorized", "forbidden", "tier_required", "rate_limited"],
});

export const listMembers = defineOperation({
  operationId: "listMembers",
  method: "GET",
  path: "/v1/team/members",
  internalPath: "/internal/v1/members",
  owner,
  ...management,
  responses: { 200: z.object({ data: z.array(memberSchema) }) },
  errors: ["unauthorized", "tier_required", "rate_limited"],
});

export const addMember = defineOperation({
  operationId: "addMember",
  method: "POST",
  path: "/v1/team/members",
  internalPath: "/internal/v1/members",
  owner,
  ...management,
  summary: "Add a member while the tier's seats allow",
  body: addMemberBodySchema,
  responses: { 201: memberSchema },
  errors: [
    "unauthorized",
    "forbidden",
    "tier_required",
    "seat_limit_reached",
    "conflict",
    "rate_limited",
  ],
});

export const removeMember = defineOperation({
  operationId: "removeMember",
  method: "DELETE",
  path: "/v1/team/members/:member_id",
  internalPath: "/internal/v1/members/:member_id",
  owner,
  ...management,
  summary:
    "Remove a member; their dashboard sessions end. The keys they issued belong to the tenant and keep working unless revoke_keys=true",
  params: z.object({ member_id: z.string().min(1).max(64) }),
  querystring: removeMemberQuerySchema,
  responses: { 204: noContent },
  errors: ["unauthorized", "forbidden", "tier_required", "not_found", "conflict", "rate_limited"],
});

/** The management API, in the order the gateway registers it. */
export const teamOperations = [
  issueApiKey,
  listApiKeys,
  revokeApiKey,
  reportCompromise,
  listMembers,
  addMember,
  removeMember,
] as const;

const account = { tags: ["account"] } as const;

export const getAccount = defineOperation({
  operationId: "getAccount",
  method: "GET",
  path: "/v1/account",
  internalPath: "/internal/v1/tenant",
  owner,
  ...account,
  summary: "The tenant: tier, caps, trial end, billing anniversary",
  responses: { 200: tenantSchema },
  errors: ["unauthorized", "rate_limited"],
});

export const changeTier = defineOperation({
  operationId: "changeTier",
  method: "POST",
  path: "/v1/account/tier",
  internalPath: "/internal/v1/tenant/tier",
  owner,
  ...account,
  summary:
    "Upgrade or downgrade; the new caps apply from the next request. A tier with fewer seats than the tenant has members is 409 until members are removed; asking for the current tier changes nothing",
  body: changeTierBodySchema,
  responses: { 200: tenantSchema },
  errors: ["unauthorized", "forbidden", "seat_limit_reached", "conflict", "rate_limited"],
});

export const cancelSubscription = defineOperation({
  operationId: "cancelSubscription",
  method: "POST",
  path: "/v1/account/cancel",
  internalPath: "/internal/v1/tenant/cancel",
  owner,
  ...account,
  summary:
    "Cancel at any time: the subscription ends at once and nothing more is charged (nothing at all during the trial)",
  responses: { 200: tenantSchema },
  errors: ["unauthorized", "forbidden", "rate_limited"],
});

export const getBilling = defineOperation({
  operationId: "getBilling",
  method: "GET",
  path: "/v1/account/billing",
  internalPath: "/internal/v1/tenant/billing",
  owner,
  ...account,
  summary:
    "Billing: the tier and its limits, the trial's end and the next charge date, the card, the latest invoices with the processor's hosted pages, and every tier's price",
  responses: { 200: billingSchema },
  errors: ["unauthorized", "rate_limited"],
});

/** The tenant's subscription, in the order the gateway registers it. */
export const accountOperations = [getAccount, changeTier, cancelSubscription, getBilling] as const;
