import { z } from "zod";
import { apiKeySchema, compromiseResponseSchema, issuedApiKeySchema } from "../team.ts";
import { defineOperation } from "./operation.ts";
import { issueApiKey, listApiKeys, reportCompromise, revokeApiKey } from "./team.ts";

// The dashboard's key page: an admin of any tier issues, rotates and revokes the tenant's keys and
// reports a compromise from a signed-in session. The management API (`/v1/team/...`) stays the
// Team and Custom tiers' programmatic surface; these paths answer sessions only, so a key cannot
// reach them (decision 0380). Each is served by the same internal route as its management twin,
// where the keys service checks that the caller is an admin.

const owner = "keys";
const dashboard = { tags: ["dashboard"], access: "session" } as const;
const keyParams = z.object({ key_id: z.string().min(1).max(64) });
const errors = ["unauthorized", "forbidden", "rate_limited"] as const;

export const listDashboardApiKeys = defineOperation({
  operationId: "listDashboardApiKeys",
  method: "GET",
  path: "/v1/dashboard/api-keys",
  internalPath: listApiKeys.internalPath,
  owner,
  ...dashboard,
  summary:
    "The tenant's API keys with their age, rotation reminder and rotation state, for an admin of any tier. Sessions only",
  responses: { 200: z.object({ data: z.array(apiKeySchema) }) },
  errors,
});

export const issueDashboardApiKey = defineOperation({
  operationId: "issueDashboardApiKey",
  method: "POST",
  path: "/v1/dashboard/api-keys",
  internalPath: issueApiKey.internalPath,
  owner,
  ...dashboard,
  summary: "Issue an API key from the dashboard; its secret is in this response only",
  body: issueApiKey.body,
  responses: { 201: issuedApiKeySchema },
  errors,
});

export const rotateDashboardApiKey = defineOperation({
  operationId: "rotateDashboardApiKey",
  method: "POST",
  path: "/v1/dashboard/api-keys/:key_id([^:/]+)::rotate",
  internalPath: "/internal/v1/api-keys/:key_id([^:/]+)::rotate",
  owner,
  ...dashboard,
  summary:
    "Rotation, step one: a new key (secret in this response only) replacing this one, which keeps working until it is revoked once the new key is deployed",
  params: keyParams,
  responses: { 201: issuedApiKeySchema },
  errors: [...errors, "not_found", "conflict"],
});

export const revokeDashboardApiKey = defineOperation({
  operationId: "revokeDashboardApiKey",
  method: "DELETE",
  path: "/v1/dashboard/api-keys/:key_id",
  internalPath: revokeApiKey.internalPath,
  owner,
  ...dashboard,
  summary:
    "Revoke a key at once (also a rotation's second step); the next request with it gets 401",
  params: keyParams,
  responses: { 204: z.null().describe("No content") },
  errors: [...errors, "not_found"],
});

export const reportDashboardCompromise = defineOperation({
  operationId: "reportDashboardCompromise",
  method: "POST",
  path: "/v1/dashboard/security/compromise",
  internalPath: reportCompromise.internalPath,
  owner,
  ...dashboard,
  summary:
    "Suspected compromise, from the dashboard: revoke every active key, rotate every webhook signing secret, and issue a fresh key",
  responses: { 200: compromiseResponseSchema },
  errors,
});

/** The dashboard's key page, in the order the gateway registers it. */
export const dashboardKeyOperations = [
  listDashboardApiKeys,
  issueDashboardApiKey,
  rotateDashboardApiKey,
  revokeDashboardApiKey,
  reportDashboardCompromise,
] as const;
