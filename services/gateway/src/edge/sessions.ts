import { randomBytes } from "node:crypto";
import fastifyJwt from "@fastify/jwt";
import type { TenantChanged } from "@th/contracts";
import type { HttpApp, InternalClient } from "@th/service-kit";
import { parseCookie, stringifySetCookie } from "cookie";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { EdgeSessions, SessionClaims } from "./edge-context.ts";

/**
 * Dashboard sessions: a short-lived access token and a longer refresh token, both JWTs signed
 * by the gateway (`@fastify/jwt`, HS256), each in an httpOnly, Secure, SameSite=Strict cookie.
 * A third cookie, readable by the page, carries the CSRF token the session's tokens are bound
 * to; state-changing calls echo it in `X-CSRF-Token` (double submit, checked against the
 * signed claim, so a cookie planted by a sibling site cannot forge it).
 */
export const SESSION_COOKIE = "th_session";
export const REFRESH_COOKIE = "th_refresh";
export const CSRF_COOKIE = "th_csrf";
export const REFRESH_PATH = "/v1/dashboard/session";

interface TokenClaims {
  typ: "access" | "refresh";
  sub: string;
  tid: string;
  sid: string;
  csrf: string;
  email: string;
  role: "admin" | "member";
  company: string;
  tier: string;
  exp?: number;
}

export interface SessionMember {
  member: { id: string; email: string; role: "admin" | "member" };
  company: string;
  tenant: TenantChanged;
}

export interface SessionOptions {
  secret: string;
  accessSeconds: number;
  refreshSeconds: number;
  keys: InternalClient;
}

/**
 * One cookie of the request, parsed only when asked for: the cookie plugin would parse every
 * request's header and wrap every reply, while only the dashboard's requests carry cookies.
 */
function cookieOf(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  return header ? parseCookie(header)[name] : undefined;
}

function setCookie(
  reply: FastifyReply,
  name: string,
  value: string,
  attributes: { httpOnly: boolean; path: string; maxAge: number },
): void {
  // Fastify keeps every set-cookie value given, one header line each.
  reply.header(
    "set-cookie",
    stringifySetCookie({
      name,
      value,
      ...attributes,
      secure: true,
      sameSite: "strict",
      ...(attributes.maxAge === 0 ? { expires: new Date(0) } : {}),
    }),
  );
}

export async function registerSessions(app: HttpApp, options: SessionOptions) {
  await app.register(fastifyJwt, {
    secret: options.secret,
    sign: { algorithm: "HS256" },
    verify: { algorithms: ["HS256"] },
  });

  const cookie = (httpOnly: boolean, path: string, maxAge: number) => ({ httpOnly, path, maxAge });

  function verify(token: string | undefined, typ: TokenClaims["typ"]): TokenClaims | null {
    if (!token) {
      return null;
    }
    try {
      const claims = app.jwt.verify<TokenClaims>(token);
      return claims.typ === typ ? claims : null;
    } catch {
      return null;
    }
  }

  function claimsOf(claims: TokenClaims): SessionClaims {
    return { tenantId: claims.tid, memberId: claims.sub, sessionId: claims.sid, csrf: claims.csrf };
  }

  /** Asks the keys service whether the member may hold a session, with the tenant's snapshot. */
  async function memberState(memberId: string, requestId: string): Promise<SessionMember | null> {
    const reply = await options.keys.send(
      "GET",
      `/internal/v1/members/${encodeURIComponent(memberId)}/session`,
      { requestId },
    );
    return reply.status === 200 ? (reply.body as SessionMember) : null;
  }

  const edge: EdgeSessions = {
    read(request) {
      const token = cookieOf(request, SESSION_COOKIE);
      if (!token) {
        return null;
      }
      const claims = verify(token, "access");
      return claims ? claimsOf(claims) : "invalid";
    },
    async tenantOf(memberId, requestId) {
      return (await memberState(memberId, requestId))?.tenant ?? null;
    },
  };

  return {
    edge,
    memberState,

    /** Issues the three cookies for a member; the same session id and CSRF token on refresh. */
    issue(
      reply: FastifyReply,
      who: SessionMember,
      session: { sid: string; csrf: string; refreshExpiresAt?: Date } = {
        sid: `ses_${randomBytes(12).toString("base64url")}`,
        csrf: randomBytes(24).toString("base64url"),
      },
    ) {
      const base = {
        sub: who.member.id,
        tid: who.tenant.tenant_id,
        sid: session.sid,
        csrf: session.csrf,
        email: who.member.email,
        role: who.member.role,
        company: who.company,
        tier: who.tenant.tier,
      };
      const now = Date.now();
      const expiresAt = new Date(now + options.accessSeconds * 1000);
      const access = app.jwt.sign(
        { ...base, typ: "access" },
        { expiresIn: `${options.accessSeconds}s` },
      );
      setCookie(reply, SESSION_COOKIE, access, cookie(true, "/", options.accessSeconds));
      let refreshExpiresAt = session.refreshExpiresAt;
      if (!refreshExpiresAt) {
        refreshExpiresAt = new Date(now + options.refreshSeconds * 1000);
        const refresh = app.jwt.sign(
          { ...base, typ: "refresh" },
          { expiresIn: `${options.refreshSeconds}s` },
        );
        setCookie(
          reply,
          REFRESH_COOKIE,
          refresh,
          cookie(true, REFRESH_PATH, options.refreshSeconds),
        );
        setCookie(reply, CSRF_COOKIE, session.csrf, cookie(false, "/", options.refreshSeconds));
      }
      return {
        member: who.member,
        tenant: {
          id: who.tenant.tenant_id,
          company: who.company,
          tier: who.tenant.tier as "starter" | "operator" | "team" | "custom",
        },
        csrf_token: session.csrf,
        expires_at: expiresAt.toISOString(),
        refresh_expires_at: refreshExpiresAt.toISOString(),
      };
    },

    /** The refresh token's claims, or null when it is missing, forged or expired. */
    refreshClaims(request: FastifyRequest) {
      const claims = verify(cookieOf(request, REFRESH_COOKIE), "refresh");
      return claims ? { ...claims, expiresAt: new Date((claims.exp ?? 0) * 1000) } : null;
    },

    /** The access token's full claims, for the session route that describes the session. */
    accessClaims(request: FastifyRequest) {
      const claims = verify(cookieOf(request, SESSION_COOKIE), "access");
      return claims ? { ...claims, expiresAt: new Date((claims.exp ?? 0) * 1000) } : null;
    },

    clear(reply: FastifyReply) {
      setCookie(reply, SESSION_COOKIE, "", cookie(true, "/", 0));
      setCookie(reply, REFRESH_COOKIE, "", cookie(true, REFRESH_PATH, 0));
      setCookie(reply, CSRF_COOKIE, "", cookie(false, "/", 0));
    },
  };
}

export type DashboardSessions = Awaited<ReturnType<typeof registerSessions>>;
