import { timingSafeEqual } from "node:crypto";
import {
  changePassword,
  dashboardSessionSchema,
  issuePasswordToken,
  setPassword,
  signInBodySchema,
} from "@th/api-schemas";
import { ApiError, errorResponses, type HttpApp, type InternalClient } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import { CSRF_HEADER, tenancyOf } from "../edge/authenticate.ts";
import type { EdgeStore } from "../edge/edge-store.ts";
import type { DashboardSessions, SessionMember } from "../edge/sessions.ts";
import { relay } from "./forward.ts";
import { callOwner, forwardOperation, publicRoute } from "./operation.ts";

const publicAtEdge = { edge: { public: true } };
const tags = ["dashboard"];

function sameToken(sent: unknown, expected: string): boolean {
  if (typeof sent !== "string") {
    return false;
  }
  const a = Buffer.from(sent);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

interface SessionDeps {
  keys: InternalClient;
  store: EdgeStore;
  sessions: DashboardSessions;
  authFailureRatePerMinute: number;
  refreshSeconds: number;
  now: () => number;
}

/**
 * Sign-in for the web dashboard. The session routes are public at the edge (per-IP limit) so
 * an expired access cookie can still be refreshed or signed out; each checks its own token.
 * Wrong credentials count against the client IP's failed-authentication window, like bad keys.
 */
export function registerDashboardSessionRoutes(app: HttpApp, deps: SessionDeps): void {
  registerSignIn(app, deps);
  registerSessionRead(app, deps);
  registerRefresh(app, deps);
  registerSignOut(app, deps);
  registerPasswordRoutes(app, deps);
}

/** Counts a failed sign-in against the client IP, then refuses it (429 once over the window). */
async function refuseSignIn(
  deps: SessionDeps,
  request: FastifyRequest,
  detail: string,
): Promise<never> {
  const window = await deps.store.limitIp(
    "authfail",
    request.ip,
    deps.authFailureRatePerMinute,
    deps.now(),
  );
  request.edge = { window };
  if (!window.allowed) {
    const seconds = Math.max(1, Math.ceil((window.retryAtMs - deps.now()) / 1000));
    throw new ApiError(
      "rate_limited",
      `too many failed sign-ins from this client; wait ${seconds} s`,
      { retry_after_seconds: seconds },
      { "retry-after": String(seconds) },
    );
  }
  throw new ApiError("unauthorized", detail);
}

function registerSignIn(app: HttpApp, deps: SessionDeps): void {
  app.post(
    "/v1/dashboard/session",
    {
      config: publicAtEdge,
      schema: {
        tags,
        operationId: "signIn",
        summary:
          "Sign in to the dashboard with email and password; sets the session, refresh and CSRF cookies",
        body: signInBodySchema,
        response: {
          201: dashboardSessionSchema,
          ...errorResponses("unauthorized", "conflict", "rate_limited"),
        },
      },
    },
    async (request, reply) => {
      const answer = await deps.keys.send("POST", "/internal/v1/credentials/verify", {
        requestId: request.id,
        body: request.body,
      });
      if (answer.status === 401) {
        return refuseSignIn(deps, request, "email or password is not correct");
      }
      if (answer.status !== 200) {
        return relay(reply, answer);
      }
      const who = answer.body as SessionMember;
      await deps.store.putTenant(who.tenant);
      return reply.status(201).send(deps.sessions.issue(reply, who));
    },
  );
}

function registerSessionRead(app: HttpApp, deps: SessionDeps): void {
  const { sessions } = deps;
  app.get(
    "/v1/dashboard/session",
    {
      schema: {
        tags,
        operationId: "getDashboardSession",
        summary: "The signed-in member, tenant and CSRF token of this dashboard session",
        response: { 200: dashboardSessionSchema, ...errorResponses("unauthorized") },
      },
    },
    async (request) => {
      const tenancy = tenancyOf(request);
      const claims = sessions.accessClaims(request);
      const refresh = sessions.refreshClaims(request);
      if (!tenancy.sessionId || !claims) {
        throw new ApiError("unauthorized", "this endpoint describes dashboard sessions only");
      }
      return {
        member: { id: claims.sub, email: claims.email, role: claims.role },
        tenant: { id: claims.tid, company: claims.company, tier: tenancy.tier },
        csrf_token: claims.csrf,
        expires_at: claims.expiresAt.toISOString(),
        refresh_expires_at: (refresh?.expiresAt ?? claims.expiresAt).toISOString(),
      };
    },
  );
}

function registerRefresh(app: HttpApp, deps: SessionDeps): void {
  const { sessions } = deps;
  app.post(
    "/v1/dashboard/session/refresh",
    {
      config: publicAtEdge,
      schema: {
        tags,
        operationId: "refreshDashboardSession",
        summary:
          "A fresh access cookie from the refresh cookie; the member's access is checked again",
        response: {
          200: dashboardSessionSchema,
          ...errorResponses("unauthorized", "forbidden", "rate_limited"),
        },
      },
    },
    async (request, reply) => {
      const claims = sessions.refreshClaims(request);
      if (!claims || (await deps.store.isSessionRevoked(claims.sid))) {
        sessions.clear(reply);
        throw new ApiError("unauthorized", "the dashboard session has ended; sign in again");
      }
      if (!sameToken(request.headers[CSRF_HEADER], claims.csrf)) {
        throw new ApiError("forbidden", "missing or wrong X-CSRF-Token");
      }
      const who = await sessions.memberState(claims.sub, request.id);
      if (!who || who.tenant.tenant_id !== claims.tid) {
        await deps.store.revokeSession(claims.sid, deps.refreshSeconds);
        sessions.clear(reply);
        throw new ApiError("unauthorized", "this member can no longer sign in to the dashboard");
      }
      await deps.store.putTenant(who.tenant);
      return sessions.issue(reply, who, {
        sid: claims.sid,
        csrf: claims.csrf,
        refreshExpiresAt: claims.expiresAt,
      });
    },
  );
}

function registerSignOut(app: HttpApp, deps: SessionDeps): void {
  const { sessions } = deps;
  app.delete(
    "/v1/dashboard/session",
    {
      config: publicAtEdge,
      schema: {
        tags,
        operationId: "signOut",
        summary: "Sign out: the session's cookies are cleared and its tokens refused everywhere",
        response: {
          204: z.null().describe("No content"),
          ...errorResponses("forbidden", "rate_limited"),
        },
      },
    },
    async (request, reply) => {
      const claims = sessions.refreshClaims(request) ?? sessions.accessClaims(request);
      if (claims) {
        if (!sameToken(request.headers[CSRF_HEADER], claims.csrf)) {
          throw new ApiError("forbidden", "missing or wrong X-CSRF-Token");
        }
        await deps.store.revokeSession(claims.sid, deps.refreshSeconds);
      }
      sessions.clear(reply);
      return reply.status(204).send(null);
    },
  );
}

/** Passwords: the member's own change, a one-time token's redemption, an admin's invite link. */
function registerPasswordRoutes(app: HttpApp, deps: SessionDeps): void {
  app.put(changePassword.path, publicRoute(changePassword), async (request, reply) => {
    if (!tenancyOf(request).sessionId) {
      throw new ApiError("forbidden", "passwords are changed from a dashboard session");
    }
    const upstream = await callOwner(deps.keys, changePassword, request);
    return upstream.status === 204 ? reply.status(204).send(null) : relay(reply, upstream);
  });

  app.post(setPassword.path, publicRoute(setPassword), async (request, reply) => {
    const upstream = await callOwner(deps.keys, setPassword, request);
    // The owner answers with the member whose password was set; the public answer is empty.
    return upstream.status === 200 ? reply.status(204).send(null) : relay(reply, upstream);
  });

  forwardOperation(app, issuePasswordToken, deps.keys);
}
