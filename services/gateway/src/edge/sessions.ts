import { randomBytes } from "node:crypto";
import fastifyJwt from "@fastify/jwt";
import type { TenantChanged } from "@th/contracts";
import type { HttpApp, InternalClient, InternalReply } from "@th/service-kit";
import { parseCookie, stringifySetCookie } from "cookie";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { EdgeSessions, SessionClaims } from "./edge-context.ts";

/**
 * Dashboard sessions: a short-lived access token and a refresh token, both JWTs signed by the
 * gateway (`@fastify/jwt`, HS256), each in an httpOnly, Secure, SameSite=Strict cookie. A third
 * cookie, readable by the page, carries the CSRF token the session's tokens are bound to;
 * state-changing calls echo it in `X-CSRF-Token` (double submit, checked against the signed
 * claim, so a cookie planted by a sibling site cannot forge it).
 *
 * The keys service keeps the session itself (decision 0337): the refresh token wraps a one-time
 * token it issued, spent at each refresh, and both tokens carry the member's session epoch,
 * which a password change or reset raises.
 */
const REFRESH_PATH = "/v1/dashboard/session";

/** The cookies' names, and where the refresh cookie is sent. */
export interface CookieNames {
  session: string;
  refresh: string;
  csrf: string;
  refreshPath: string;
}

/**
 * Over TLS the cookies are `__Host-` cookies (decision 0339): a browser takes them only when
 * Secure, with Path=/ and no Domain, so neither a sibling subdomain nor a plain-HTTP page can
 * plant one. That rules out the refresh cookie's narrower path. Without the prefix (development
 * over plain HTTP) the names and paths stay as they were.
 */
function cookieNames(hostPrefix: boolean): CookieNames {
  return hostPrefix
    ? {
        session: "__Host-th_session",
        refresh: "__Host-th_refresh",
        csrf: "__Host-th_csrf",
        refreshPath: "/",
      }
    : { session: "th_session", refresh: "th_refresh", csrf: "th_csrf", refreshPath: REFRESH_PATH };
}

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
  /** The member's session epoch at issue; tokens from before the epoch mechanism read as 0. */
  ep?: number;
  /** Refresh tokens only: the keys service's one-time token for the next refresh. */
  rt?: string;
  exp?: number;
}

interface SessionMember {
  member: { id: string; email: string; role: "admin" | "member" };
  company: string;
  tenant: TenantChanged;
}

/** A session as the keys service opens or refreshes it. */
export interface OpenedSession extends SessionMember {
  session: {
    id: string;
    epoch: number;
    /** The next one-time refresh token; null on a second refresh within the grace. */
    refresh_token: string | null;
    expires_at: string;
  };
}

export interface SessionOptions {
  secret: string;
  accessSeconds: number;
  /** How long a sign-in lasts; the keys service ends the session then. */
  refreshSeconds: number;
  keys: InternalClient;
  /** `__Host-` cookie names (served over TLS). */
  hostPrefix: boolean;
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

/** The keys service's side of a session: the member's state, sign-in, refresh and sign-out. */
function keysSessionCalls(options: Pick<SessionOptions, "keys" | "refreshSeconds">) {
  return {
    /** Whether the member may hold a session, with the tenant's snapshot. */
    async memberState(memberId: string, requestId: string): Promise<SessionMember | null> {
      const reply = await options.keys.send(
        "GET",
        `/internal/v1/members/${encodeURIComponent(memberId)}/session`,
        { route: "/internal/v1/members/:member_id/session", requestId },
      );
      return reply.status === 200 ? (reply.body as SessionMember) : null;
    },

    /** Sign-in: 201 with an opened session, else the keys service's refusal. */
    open(body: object, requestId: string): Promise<InternalReply> {
      return options.keys.send("POST", "/internal/v1/sessions", {
        requestId,
        body: { ...body, lifetime_seconds: options.refreshSeconds },
      });
    },

    /** Spends the refresh token: 200 with the next, else the session is over. */
    rotate(sessionId: string, refreshToken: string, requestId: string): Promise<InternalReply> {
      return options.keys.send("POST", "/internal/v1/sessions/refresh", {
        requestId,
        body: { session_id: sessionId, refresh_token: refreshToken },
      });
    },

    /** Sign-out: the session ends, so its refresh tokens stop working. */
    async end(sessionId: string, requestId: string): Promise<void> {
      await options.keys.send("POST", "/internal/v1/sessions/end", {
        requestId,
        body: { session_id: sessionId },
      });
    },
  };
}

export async function registerSessions(app: HttpApp, options: SessionOptions) {
  await app.register(fastifyJwt, {
    secret: options.secret,
    sign: { algorithm: "HS256" },
    verify: { algorithms: ["HS256"] },
  });
  const names = cookieNames(options.hostPrefix);
  const calls = keysSessionCalls(options);
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
    return {
      tenantId: claims.tid,
      memberId: claims.sub,
      sessionId: claims.sid,
      csrf: claims.csrf,
      epoch: claims.ep ?? 0,
    };
  }

  const edge: EdgeSessions = {
    read(request) {
      const token = cookieOf(request, names.session);
      if (!token) {
        return null;
      }
      const claims = verify(token, "access");
      return claims ? claimsOf(claims) : "invalid";
    },
    async tenantOf(memberId, requestId) {
      return (await calls.memberState(memberId, requestId))?.tenant ?? null;
    },
  };

  return {
    ...calls,
    edge,
    names,

    /**
     * Sets the cookies of an opened or refreshed session: always a new access token; a new
     * refresh token (and the CSRF cookie) when the keys service issued one.
     */
    issue(
      reply: FastifyReply,
      opened: OpenedSession,
      csrf = randomBytes(24).toString("base64url"),
    ) {
      const { session } = opened;
      const base = {
        sub: opened.member.id,
        tid: opened.tenant.tenant_id,
        sid: session.id,
        csrf,
        email: opened.member.email,
        role: opened.member.role,
        company: opened.company,
        tier: opened.tenant.tier,
        ep: session.epoch,
      };
      const nowSeconds = Math.floor(Date.now() / 1000);
      const endsAt = Math.floor(Date.parse(session.expires_at) / 1000);
      // No access token outlives its session.
      const accessExp = Math.min(nowSeconds + options.accessSeconds, endsAt);
      const access = app.jwt.sign({ ...base, typ: "access", exp: accessExp });
      setCookie(reply, names.session, access, cookie(true, "/", accessExp - nowSeconds));
      if (session.refresh_token !== null) {
        const refresh = app.jwt.sign({
          ...base,
          typ: "refresh",
          rt: session.refresh_token,
          exp: endsAt,
        });
        const maxAge = endsAt - nowSeconds;
        setCookie(reply, names.refresh, refresh, cookie(true, names.refreshPath, maxAge));
        setCookie(reply, names.csrf, csrf, cookie(false, "/", maxAge));
      }
      return {
        member: opened.member,
        tenant: {
          id: opened.tenant.tenant_id,
          company: opened.company,
          tier: opened.tenant.tier as "starter" | "operator" | "team" | "custom",
        },
        csrf_token: csrf,
        expires_at: new Date(accessExp * 1000).toISOString(),
        refresh_expires_at: new Date(endsAt * 1000).toISOString(),
      };
    },

    /** The refresh token's claims, or null when it is missing, forged or expired. */
    refreshClaims(request: FastifyRequest) {
      const claims = verify(cookieOf(request, names.refresh), "refresh");
      return claims ? { ...claims, expiresAt: new Date((claims.exp ?? 0) * 1000) } : null;
    },

    /** The access token's full claims, for the session route that describes the session. */
    accessClaims(request: FastifyRequest) {
      const claims = verify(cookieOf(request, names.session), "access");
      return claims ? { ...claims, expiresAt: new Date((claims.exp ?? 0) * 1000) } : null;
    },

    clear(reply: FastifyReply) {
      setCookie(reply, names.session, "", cookie(true, "/", 0));
      setCookie(reply, names.refresh, "", cookie(true, names.refreshPath, 0));
      setCookie(reply, names.csrf, "", cookie(false, "/", 0));
    },
  };
}

export type DashboardSessions = Awaited<ReturnType<typeof registerSessions>>;
