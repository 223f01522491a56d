import {
  addMemberBodySchema,
  apiKeySchema,
  compromiseResponseSchema,
  issueApiKeyBodySchema,
  issuedApiKeySchema,
  memberSchema,
  removeMemberQuerySchema,
} from "@th/api-schemas";
import { errorResponses, type HttpApp, type InternalClient } from "@th/service-kit";
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { EdgeStore } from "../edge/edge-store.ts";
import { callAs, relay } from "./forward.ts";

const management = { edge: { surface: "management" as const } };
const tags = ["team"];
const security = [{ bearerAuth: [] }];

/**
 * The management API: keys and members of the caller's tenant, for Team and Custom admins.
 * Revocations are written to the edge's shared state before the answer leaves, so the very
 * next request with a revoked key is refused on every gateway instance.
 */
export function registerTeamRoutes(
  app: HttpApp,
  deps: { keys: InternalClient; store: EdgeStore; sessionSeconds: number },
): void {
  async function refuseKeys(hashes: unknown) {
    for (const hash of Array.isArray(hashes) ? hashes : []) {
      await deps.store.markRevoked(String(hash));
    }
  }
  /**
   * Removes a key or a member in the keys service, then refuses its keys at the edge (and runs
   * `alsoRefuse`) before the 204 leaves.
   */
  async function removeThenRefuse(
    request: FastifyRequest,
    reply: FastifyReply,
    path: string,
    alsoRefuse?: () => Promise<void>,
  ) {
    const upstream = await callAs(deps.keys, request, "DELETE", path);
    if (upstream.status !== 200) {
      return relay(reply, upstream);
    }
    await refuseKeys((upstream.body as { key_hashes?: unknown }).key_hashes);
    await alsoRefuse?.();
    return reply.status(204).send(null);
  }

  app.post(
    "/v1/team/api-keys",
    {
      config: management,
      schema: {
        tags,
        security,
        operationId: "issueApiKey",
        summary: "Issue an API key; its secret is in this response only",
        body: issueApiKeyBodySchema,
        response: {
          201: issuedApiKeySchema,
          ...errorResponses("unauthorized", "forbidden", "tier_required", "rate_limited"),
        },
      },
    },
    async (request, reply) =>
      relay(reply, await callAs(deps.keys, request, "POST", "/internal/v1/api-keys", request.body)),
  );

  app.get(
    "/v1/team/api-keys",
    {
      config: management,
      schema: {
        tags,
        security,
        operationId: "listApiKeys",
        summary: "List the tenant's API keys with their age; secrets are never shown",
        response: {
          200: z.object({ data: z.array(apiKeySchema) }),
          ...errorResponses("unauthorized", "forbidden", "tier_required", "rate_limited"),
        },
      },
    },
    async (request, reply) =>
      relay(reply, await callAs(deps.keys, request, "GET", "/internal/v1/api-keys")),
  );

  app.delete(
    "/v1/team/api-keys/:key_id",
    {
      config: management,
      schema: {
        tags,
        security,
        operationId: "revokeApiKey",
        summary: "Revoke a key at once; the next request with it gets 401",
        params: z.object({ key_id: z.string().min(1).max(64) }),
        response: {
          204: z.null().describe("No content"),
          ...errorResponses(
            "unauthorized",
            "forbidden",
            "tier_required",
            "not_found",
            "rate_limited",
          ),
        },
      },
    },
    async (request, reply) =>
      removeThenRefuse(
        request,
        reply,
        `/internal/v1/api-keys/${encodeURIComponent(request.params.key_id)}`,
      ),
  );

  app.post(
    "/v1/team/security/compromise",
    {
      config: management,
      schema: {
        tags,
        security,
        operationId: "reportCompromise",
        summary:
          "Suspected compromise: revoke every active key, rotate every webhook signing secret, and issue a fresh key",
        response: {
          200: compromiseResponseSchema,
          ...errorResponses("unauthorized", "forbidden", "tier_required", "rate_limited"),
        },
      },
    },
    async (request, reply) => {
      const upstream = await callAs(deps.keys, request, "POST", "/internal/v1/api-keys/revoke-all");
      if (upstream.status !== 200) {
        return relay(reply, upstream);
      }
      const body = upstream.body as {
        revoked_key_ids: string[];
        key_hashes: string[];
        api_key: unknown;
      };
      await refuseKeys(body.key_hashes);
      return {
        revoked_key_ids: body.revoked_key_ids,
        webhook_secrets_rotation: "requested" as const,
        api_key: body.api_key as z.infer<typeof issuedApiKeySchema>,
      };
    },
  );

  app.get(
    "/v1/team/members",
    {
      config: management,
      schema: {
        tags,
        security,
        operationId: "listMembers",
        response: {
          200: z.object({ data: z.array(memberSchema) }),
          ...errorResponses("unauthorized", "tier_required", "rate_limited"),
        },
      },
    },
    async (request, reply) =>
      relay(reply, await callAs(deps.keys, request, "GET", "/internal/v1/members")),
  );

  app.post(
    "/v1/team/members",
    {
      config: management,
      schema: {
        tags,
        security,
        operationId: "addMember",
        summary: "Add a member while the tier's seats allow",
        body: addMemberBodySchema,
        response: {
          201: memberSchema,
          ...errorResponses(
            "unauthorized",
            "forbidden",
            "tier_required",
            "seat_limit_reached",
            "conflict",
            "rate_limited",
          ),
        },
      },
    },
    async (request, reply) =>
      relay(reply, await callAs(deps.keys, request, "POST", "/internal/v1/members", request.body)),
  );

  app.delete(
    "/v1/team/members/:member_id",
    {
      config: management,
      schema: {
        tags,
        security,
        operationId: "removeMember",
        summary:
          "Remove a member; their dashboard sessions end. The keys they issued belong to the tenant and keep working unless revoke_keys=true",
        params: z.object({ member_id: z.string().min(1).max(64) }),
        querystring: removeMemberQuerySchema,
        response: {
          204: z.null().describe("No content"),
          ...errorResponses(
            "unauthorized",
            "forbidden",
            "tier_required",
            "not_found",
            "conflict",
            "rate_limited",
          ),
        },
      },
    },
    async (request, reply) =>
      removeThenRefuse(
        request,
        reply,
        `/internal/v1/members/${encodeURIComponent(request.params.member_id)}?revoke_keys=${request.query.revoke_keys}`,
        // Their dashboard sessions end too.
        () => deps.store.endMemberSessions(request.params.member_id, deps.sessionSeconds),
      ),
  );
}
