import { timingSafeEqual } from "node:crypto";
import { ApiError } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import type { Admit } from "./admission.ts";
import type { ClientLimits } from "./client-limits.ts";
import type { EdgeRouteConfig, EdgeSessions, SessionClaims } from "./edge-context.ts";
import type { EdgeStore } from "./edge-store.ts";
import { rebuilding } from "./key-authentication.ts";

export const CSRF_HEADER = "x-csrf-token";
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** Whether a state-changing call echoes the session's CSRF token; safe methods need none. */
export function csrfSatisfied(
  method: string,
  sent: string | string[] | undefined,
  expected: string,
): boolean {
  return SAFE_METHODS.has(method) || csrfMatches(sent, expected);
}

function csrfMatches(sent: string | string[] | undefined, expected: string): boolean {
  if (typeof sent !== "string") {
    return false;
  }
  const a = Buffer.from(sent);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

interface SessionOptions {
  store: EdgeStore;
  sessions: EdgeSessions;
}

/**
 * A signed-in dashboard member: the same tenant window, quota facts, tier gate and headers as
 * the tenant's keys, and a CSRF token on every state-changing call.
 */
export function createSessionAuthentication(
  options: SessionOptions,
  now: () => number,
  refuse: ClientLimits["refuse"],
  admit: Admit,
) {
  const { store, sessions } = options;
  return async function admitSession(
    request: FastifyRequest,
    claims: SessionClaims,
    config: EdgeRouteConfig,
  ): Promise<void> {
    let answer = await store.authorizeSession(claims, now());
    if (answer.kind === "miss") {
      const tenant = await sessions.tenantOf(claims.memberId, request.id);
      if (!tenant) {
        return refuse(request, "this member can no longer sign in to the dashboard");
      }
      await store.putTenant(tenant);
      answer = await store.authorizeSession(claims, now());
    }
    if (answer.kind === "revoked") {
      return refuse(
        request,
        "this dashboard session was signed out or ended by a password change; sign in again",
      );
    }
    if (answer.kind === "inactive") {
      return refuse(request, "the subscription of this tenant has ended");
    }
    if (answer.kind !== "ok") {
      throw rebuilding();
    }
    admit(request, answer, config, claims.sessionId);
    if (!csrfSatisfied(request.method, request.headers[CSRF_HEADER], claims.csrf)) {
      throw new ApiError(
        "forbidden",
        "missing or wrong X-CSRF-Token: state-changing dashboard calls must echo the session's CSRF token",
      );
    }
  };
}
