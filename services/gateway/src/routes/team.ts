import {
  addMember,
  issueApiKey,
  issueDashboardApiKey,
  type issuedApiKeySchema,
  listApiKeys,
  listDashboardApiKeys,
  listMembers,
  removeMember,
  reportCompromise,
  reportDashboardCompromise,
  revokeApiKey,
  revokeDashboardApiKey,
  rotateDashboardApiKey,
} from "@th/api-schemas";
import type { HttpApp, InternalClient } from "@th/service-kit";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import type { EdgeStore } from "../edge/edge-store.ts";
import { callAs, type OwnerTarget, relay } from "./forward.ts";
import { callOwner, forwardOperation, ownerTarget, publicRoute } from "./operation.ts";

interface TeamDeps {
  keys: InternalClient;
  store: EdgeStore;
  sessionSeconds: number;
}

/**
 * The management API: keys and members of the caller's tenant, for Team and Custom admins; and
 * the dashboard's key page, the same key operations for an admin of any tier signed in to the
 * dashboard (decision 0380). Revocations are written to the edge's shared state before the answer
 * leaves, so the very next request with a revoked key is refused on every gateway instance.
 */
export function registerTeamRoutes(app: HttpApp, deps: TeamDeps): void {
  forwardOperation(app, issueApiKey, deps.keys);
  forwardOperation(app, listApiKeys, deps.keys);
  registerRevokeKeyRoute(app, deps, revokeApiKey);
  registerCompromiseRoute(app, deps, reportCompromise);
  forwardOperation(app, listMembers, deps.keys);
  forwardOperation(app, addMember, deps.keys);
  registerRemoveMemberRoute(app, deps);

  forwardOperation(app, listDashboardApiKeys, deps.keys);
  forwardOperation(app, issueDashboardApiKey, deps.keys);
  forwardOperation(app, rotateDashboardApiKey, deps.keys);
  registerRevokeKeyRoute(app, deps, revokeDashboardApiKey);
  registerCompromiseRoute(app, deps, reportDashboardCompromise);
}

async function refuseKeys(store: EdgeStore, hashes: unknown) {
  for (const hash of Array.isArray(hashes) ? hashes : []) {
    await store.markRevoked(String(hash));
  }
}

/**
 * Removes a key or a member in the keys service, then refuses its keys at the edge (and runs
 * `alsoRefuse`) before the 204 leaves.
 */
async function removeThenRefuse(
  deps: TeamDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  target: OwnerTarget,
  alsoRefuse?: () => Promise<void>,
) {
  const upstream = await callAs(deps.keys, request, "DELETE", target);
  if (upstream.status !== 200) {
    return relay(reply, upstream);
  }
  await refuseKeys(deps.store, (upstream.body as { key_hashes?: unknown }).key_hashes);
  await alsoRefuse?.();
  return reply.status(204).send(null);
}

function registerRevokeKeyRoute(
  app: HttpApp,
  deps: TeamDeps,
  operation: typeof revokeApiKey | typeof revokeDashboardApiKey,
): void {
  app.delete(operation.path, publicRoute(operation), async (request, reply) =>
    removeThenRefuse(deps, request, reply, ownerTarget(operation, request.params)),
  );
}

function registerCompromiseRoute(
  app: HttpApp,
  deps: TeamDeps,
  operation: typeof reportCompromise | typeof reportDashboardCompromise,
): void {
  app.post(operation.path, publicRoute(operation), async (request, reply) => {
    const upstream = await callOwner(deps.keys, operation, request);
    if (upstream.status !== 200) {
      return relay(reply, upstream);
    }
    const body = upstream.body as {
      revoked_key_ids: string[];
      key_hashes: string[];
      api_key: unknown;
    };
    await refuseKeys(deps.store, body.key_hashes);
    return {
      revoked_key_ids: body.revoked_key_ids,
      webhook_secrets_rotation: "requested" as const,
      api_key: body.api_key as z.infer<typeof issuedApiKeySchema>,
    };
  });
}

function registerRemoveMemberRoute(app: HttpApp, deps: TeamDeps): void {
  app.delete(removeMember.path, publicRoute(removeMember), async (request, reply) =>
    removeThenRefuse(
      deps,
      request,
      reply,
      ownerTarget(removeMember, request.params, `revoke_keys=${request.query.revoke_keys}`),
      // Their dashboard sessions end too.
      () => deps.store.endMemberSessions(request.params.member_id, deps.sessionSeconds),
    ),
  );
}
