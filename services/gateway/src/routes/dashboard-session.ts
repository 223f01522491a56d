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
import {
  lockWaitSeconds,
  signInAccountKey,
  type signInBackoffPolicy,
} from "../domain/sign-in-accounts.ts";
import { CSRF_HEADER, tenancyOf } from "../edge/authenticate.ts";
import type { EdgeStore } from "../edge/edge-store.ts";
import type { DashboardSessions, OpenedSession } from "../edge/sessions.ts";
import { relay } from "./forward.ts";
import { callOwner, forwardOperation, publicRoute } from "./operation.ts";

const publicAtEdge = { edge: { public: true } };
// Refresh and sign-out carry the session's own token: not in the public per-IP window, so
// anonymous traffic from the same address (a shared office or proxy) cannot starve them.
const ownCredentialAtEdge = { edge: { public: true, ownCredential: true } };
const tags = ["dashboard"];
const SESSION_ENDED = "the dashboard session has ended; sign in again";

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
  /** Lifetime of an access token: how long a raised session epoch must be remembered. */
  accessSeconds: number;
  refreshSeconds: number;
  signInBackoff: ReturnType<typeof signInBackoffPolicy>;
  now: () => number;
}

/**
 * Sign-in for the web dashboard. The session routes are public at the edge so an expired access
 * cookie can still be refreshed or signed out; each checks its own token. Wrong credentials
 * count against the client IP's failed-authentication window, like bad keys, and against the
 * account's own window, which locks it with a growing back-off (decision 0335).
 */
export function registerDashboardSessionRoutes(app: HttpApp, deps: SessionDeps): void {
  registerSignIn(app, deps);
  registerSessionRead(app, deps);
  registerRefresh(app, deps);
  registerSignOut(app, deps);
  registerPasswordRoutes(app, deps);
}

/**
 * Counts a refused credential against the client IP, then refuses it: 429 once the client is
 * over its window or when the account is locked (`lockedUntilMs` set), else 401 with `detail`.
 */
async function refuseCredential(
  deps: SessionDeps,
  request: FastifyRequest,
  detail: string,
  lockedUntilMs = 0,
): Promise<never> {
  const now = deps.now();
  const window = await deps.store.limitIp(
    "authfail",
    request.ip,
    deps.authFailureRatePerMinute,
    now,
  );
  request.edge = { window };
  if (!window.allowed) {
    const seconds = Math.max(1, Math.ceil((window.retryAtMs - now) / 1000));
    throw new ApiError(
      "rate_limited",
      `too many failed sign-ins from this client; wait ${seconds} s`,
      { retry_after_seconds: seconds },
      { "retry-after": String(seconds) },
    );
  }
  if (lockedUntilMs > 0) {
    const seconds = lockWaitSeconds(lockedUntilMs, now);
    throw new ApiError(
      "rate_limited",
      `too many failed sign-ins for this account; wait ${seconds} s before trying again`,
      { retry_after_seconds: seconds },
      { "retry-after": String(seconds) },
    );
  }
  throw new ApiError("unauthorized", detail);
}

/**
 * Counts a password check against the account before it is made. While the account is locked
 * the password is not checked at all, so a right one gets the same answer as a wrong one.
 */
async function beginPasswordCheck(deps: SessionDeps, request: FastifyRequest, email: string) {
  const account = signInAccountKey(email);
  const attempt = await deps.store.beginSignIn(account, deps.now(), deps.signInBackoff);
  if (!attempt.allowed) {
    await refuseCredential(deps, request, "this account is locked", attempt.lockedUntilMs);
  }
  return { account, lockedUntilMs: attempt.lockedUntilMs };
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
      const check = await beginPasswordCheck(deps, request, request.body.email);
      const answer = await deps.sessions.open(request.body, request.id);
      if (answer.status === 401) {
        return refuseCredential(
          deps,
          request,
          "email or password is not correct",
          check.lockedUntilMs,
        );
      }
      // A conflict names the accounts the password opened: it was proved as much as a success.
      if (answer.status === 201 || answer.status === 409) {
        await deps.store.signInSucceeded(check.account);
      }
      if (answer.status !== 201) {
        return relay(reply, answer);
      }
      const opened = answer.body as OpenedSession;
      await deps.store.putTenant(opened.tenant);
      return reply.status(201).send(deps.sessions.issue(reply, opened));
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

/** How long a mark about this session must last: until its refresh token would expire. */
function markSeconds(deps: SessionDeps, expiresAt: Date): number {
  return Math.max(1, Math.ceil((expiresAt.getTime() - Date.now()) / 1000), deps.accessSeconds);
}

function registerRefresh(app: HttpApp, deps: SessionDeps): void {
  const { sessions } = deps;
  app.post(
    "/v1/dashboard/session/refresh",
    {
      config: ownCredentialAtEdge,
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
      if (!claims?.rt) {
        sessions.clear(reply);
        return refuseCredential(deps, request, SESSION_ENDED);
      }
      if (await deps.store.isSessionRevoked(claims.sid)) {
        sessions.clear(reply);
        throw new ApiError("unauthorized", SESSION_ENDED);
      }
      if (!sameToken(request.headers[CSRF_HEADER], claims.csrf)) {
        throw new ApiError("forbidden", "missing or wrong X-CSRF-Token");
      }
      const answer = await sessions.rotate(claims.sid, claims.rt, request.id);
      const opened = answer.status === 200 ? (answer.body as OpenedSession) : null;
      if (answer.status !== 200 && answer.status !== 401) {
        return relay(reply, answer);
      }
      if (!opened || opened.tenant.tenant_id !== claims.tid) {
        // Ended, expired, the member gone, or a spent token presented again: in the last case the
        // keys service has just ended the session, and its access tokens must stop here too.
        await deps.store.revokeSession(claims.sid, markSeconds(deps, claims.expiresAt));
        sessions.clear(reply);
        throw new ApiError("unauthorized", SESSION_ENDED);
      }
      await deps.store.putTenant(opened.tenant);
      return sessions.issue(reply, opened, claims.csrf);
    },
  );
}

function registerSignOut(app: HttpApp, deps: SessionDeps): void {
  const { sessions } = deps;
  app.delete(
    "/v1/dashboard/session",
    {
      config: ownCredentialAtEdge,
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
        // The mark refuses the session's tokens at every instance for its whole life; ending it at
        // the keys service as well keeps it ended should the mark be lost.
        await deps.store.revokeSession(claims.sid, deps.refreshSeconds);
        await sessions.end(claims.sid, request.id).catch((error: unknown) => {
          request.log.warn({ err: error }, "sign-out could not reach the keys service");
        });
      }
      sessions.clear(reply);
      return reply.status(204).send(null);
    },
  );
}

/** What the keys service answers when a password was set: the member and their new epoch. */
interface PasswordSet {
  member_id: string;
  session_epoch: number;
}

/**
 * Passwords: the member's own change, a one-time token's redemption, an admin's invite link. A
 * change or reset ends every session of the member (decision 0337): the keys service ends them
 * and raises the member's epoch, and the edge is told the epoch so the access tokens of the old
 * one stop at once rather than when they expire.
 */
function registerPasswordRoutes(app: HttpApp, deps: SessionDeps): void {
  const { sessions } = deps;
  app.put(changePassword.path, publicRoute(changePassword), async (request, reply) => {
    const claims = sessions.accessClaims(request);
    if (!tenancyOf(request).sessionId || !claims) {
      throw new ApiError("forbidden", "passwords are changed from a dashboard session");
    }
    // The current password is a password check like a sign-in's, in the same account window.
    const check = await beginPasswordCheck(deps, request, claims.email);
    const upstream = await callOwner(deps.keys, changePassword, request);
    if (upstream.status === 403 && check.lockedUntilMs > 0) {
      return refuseCredential(
        deps,
        request,
        "the current password is not correct",
        check.lockedUntilMs,
      );
    }
    if (upstream.status !== 200) {
      return relay(reply, upstream);
    }
    await deps.store.signInSucceeded(check.account);
    await endOlderSessions(deps, upstream.body as PasswordSet);
    sessions.clear(reply);
    return reply.status(204).send(null);
  });

  app.post(setPassword.path, publicRoute(setPassword), async (request, reply) => {
    const upstream = await callOwner(deps.keys, setPassword, request);
    if (upstream.status !== 200) {
      return relay(reply, upstream);
    }
    // The owner answers with the member whose password was set; the public answer is empty.
    await endOlderSessions(deps, upstream.body as PasswordSet);
    return reply.status(204).send(null);
  });

  forwardOperation(app, issuePasswordToken, deps.keys);
}

async function endOlderSessions(deps: SessionDeps, set: PasswordSet): Promise<void> {
  await deps.store.raiseMemberEpoch(set.member_id, set.session_epoch, deps.accessSeconds);
}
