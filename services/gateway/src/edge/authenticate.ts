import { timingSafeEqual } from "node:crypto";
import { Readable } from "node:stream";
import { isWellFormedApiKey, KEY_LIKE } from "@th/api-keys";
import {
  billingPeriodAt,
  cheapestTierWith,
  nextTierWithMoreLeadViews,
  type Surface,
  TIERS,
  tierOpens,
} from "@th/billing";
import type { TenantChanged, Tier } from "@th/contracts";
import { ApiError, type HttpApp } from "@th/service-kit";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { KeysClient } from "../clients/keys-client.ts";
import { bodyHoldsKey } from "./body-keys.ts";
import type { Authorization, EdgeStore, RateWindow } from "./edge-store.ts";
import { noQuotaHeaders, noWindowHeaders } from "./limit-headers.ts";
import { wholeNumberText } from "./number-text.ts";

/** What a route tells the edge about itself. */
export interface EdgeRouteConfig {
  /** No key needed; an Authorization header is ignored; a per-IP limit applies. */
  public?: boolean;
  /** The surface a tier must open; `rest` when not said. */
  surface?: Surface;
}

declare module "fastify" {
  interface FastifyContextConfig {
    edge?: EdgeRouteConfig;
  }
  interface FastifyRequest {
    edge?: EdgeContext;
    /** The six limit headers for this request, for routes that write the raw response. */
    limitHeaders(): Promise<Record<string, string>>;
  }
}

export interface Tenancy {
  tenantId: string;
  memberId: string;
  /** The API key's id; for a dashboard session, the session's id. */
  keyId: string;
  tier: Tier;
  /** Set when the caller is a signed-in dashboard member rather than an API key. */
  sessionId?: string;
}

/** What a valid dashboard access token says. */
export interface SessionClaims {
  tenantId: string;
  memberId: string;
  sessionId: string;
  /** The CSRF token bound to the session; state-changing calls echo it in X-CSRF-Token. */
  csrf: string;
}

/** The dashboard's second way in: a signed session cookie instead of a key. */
export interface EdgeSessions {
  /** The access token's claims; null without a session cookie; "invalid" when it fails to verify. */
  read(request: FastifyRequest): SessionClaims | null | "invalid";
  /** On a tenant-cache miss: the tenant's snapshot, or null when the member may not sign in. */
  tenantOf(memberId: string, requestId: string): Promise<TenantChanged | null>;
}

export const CSRF_HEADER = "x-csrf-token";
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export interface QuotaState {
  limit: number;
  /** Known after a reservation; otherwise read once, when the headers are written. */
  remaining?: number;
  periodStart: Date;
  /** The next billing anniversary, when the month's lead-views reset. */
  resetsAt: Date;
  /**
   * When the edge admitted the request (ms): its reads are metered as of then, so the UTC day
   * and the billing period of a charge always agree, even for a request that crosses midnight.
   */
  admittedAt: number;
}

export interface EdgeContext {
  tenancy?: Tenancy;
  window?: RateWindow;
  quota?: QuotaState;
}

/** The month's lead-view state; until metering exists the whole cap remains. */
export type QuotaReader = (
  tenancy: Tenancy,
  cap: number,
  period: { start: Date; end: Date },
) => Promise<number>;

export interface EdgeOptions {
  store: EdgeStore;
  keys: KeysClient;
  /** A key's stored hash (see `rememberingKeyHasher`). */
  hashKey: (key: string) => string;
  upgradeUrl: string;
  publicRatePerMinute: number;
  authFailureRatePerMinute: number;
  remainingLeadViews?: QuotaReader;
  sessions?: EdgeSessions;
  now?: () => number;
  /** Counts refusals with 429, by whose window refused: `tenant`, `public` or `auth_failure`. */
  onRateLimited?: (scope: "tenant" | "public" | "auth_failure") => void;
}

export function upgradeUrlFor(base: string, tier: string, surface: Surface): string {
  return pricingUrl(base, tier, cheapestTierWith(surface), surface);
}

/** Where a tenant out of lead-views can buy more: the next tier up with a larger monthly cap. */
export function quotaUpgradeUrlFor(base: string, tier: Tier): string {
  return pricingUrl(base, tier, nextTierWithMoreLeadViews(tier), "lead_views");
}

/** The pricing page, opened on a move from one tier to another for a feature. */
function pricingUrl(base: string, from: string, to: string, feature: string): string {
  const url = new URL(base);
  url.searchParams.set("from", from);
  url.searchParams.set("to", to);
  url.searchParams.set("feature", feature);
  return url.toString();
}

function retryAfterSeconds(window: RateWindow, now: number): number {
  return Math.max(1, Math.ceil((window.retryAtMs - now) / 1000));
}

function rateLimited(window: RateWindow, now: number, who: string): ApiError {
  const seconds = retryAfterSeconds(window, now);
  return new ApiError(
    "rate_limited",
    `${who} exceeded ${window.limit} requests per rolling minute; wait ${seconds} s before retrying (retrying sooner extends the wait)`,
    { retry_after_seconds: seconds },
    { "retry-after": String(seconds) },
  );
}

const KEY_IN_BODY =
  "an API key must never be sent in the request body; send it as Authorization: Bearer <key>, and revoke this key";

/**
 * The authenticated edge: every `/v1` request passes here before its route. A key is accepted
 * only as `Authorization: Bearer`; a key-shaped string anywhere in the URL or body is refused
 * with 401 whatever else the request carries. One Redis round trip resolves the key and charges
 * the tenant's rolling minute; the tier gate and the six limit headers follow from the answer.
 */
export function registerEdge(app: HttpApp, options: EdgeOptions): void {
  const now = options.now ?? (() => Date.now());
  const periods = billingPeriods();

  async function refuse(request: FastifyRequest, detail: string): Promise<never> {
    // Failed authentication is limited per client IP so keys cannot be guessed at speed.
    const window = await options.store.limitIp(
      "authfail",
      request.ip,
      options.authFailureRatePerMinute,
      now(),
    );
    request.edge = { window };
    if (!window.allowed) {
      options.onRateLimited?.("auth_failure");
      throw rateLimited(window, now(), "this client");
    }
    throw new ApiError("unauthorized", detail);
  }

  /** Asks the keys service about a key and caches the answer in Redis. */
  async function refresh(keyHash: string, requestId: string): Promise<void> {
    const found = await options.keys.lookup(keyHash, requestId);
    if (!found) {
      await options.store.putUnknown(keyHash);
      return;
    }
    await options.store.putTenant(found.tenant);
    const record = { tenantId: found.tenant_id, memberId: found.member_id, keyId: found.key_id };
    if (found.revoked) {
      await options.store.markRevoked(keyHash, record);
    } else {
      await options.store.putKey(keyHash, { ...record, revoked: false });
    }
  }

  // When a tenant's cached record expires, every request of its keys misses at once; they wait
  // for one lookup per key instead of each asking the keys service.
  const refreshing = new Map<string, Promise<void>>();

  function refreshOnce(keyHash: string, requestId: string): Promise<void> {
    let pending = refreshing.get(keyHash);
    if (!pending) {
      pending = refresh(keyHash, requestId).finally(() => refreshing.delete(keyHash));
      refreshing.set(keyHash, pending);
    }
    return pending;
  }

  async function resolve(request: FastifyRequest, keyHash: string) {
    let answer = await options.store.authorize(keyHash, now());
    if (answer.kind === "ok" && answer.refreshDue) {
      // The cached tenant record is near its expiry: renewed in the background, so no request
      // of a busy tenant waits for the lookup that would follow its expiry.
      refreshOnce(keyHash, request.id).catch((error: unknown) => {
        request.log.warn({ err: error }, "refreshing a cached tenant record failed");
      });
    }
    if (answer.kind === "miss") {
      await refreshOnce(keyHash, request.id);
      answer = await options.store.authorize(keyHash, now());
      if (answer.kind === "miss") {
        throw new ApiError(
          "unavailable",
          "authentication state is being rebuilt; try again shortly",
        );
      }
    }
    return answer;
  }

  app.addHook("onRequest", async (request) => {
    if (!passesEdge(request)) {
      return;
    }
    const config = request.routeOptions.config?.edge ?? {};
    let url = request.url;
    if (url.includes("%")) {
      try {
        url = decodeURIComponent(url);
      } catch {
        // A malformed escape cannot hide a key from the raw test below.
      }
    }
    if (KEY_LIKE.test(url)) {
      await refuse(
        request,
        "an API key must never be sent in the URL or query string; send it as Authorization: Bearer <key>, and revoke this key",
      );
    }
    if (config.public) {
      const window = await options.store.limitIp(
        "public",
        request.ip,
        options.publicRatePerMinute,
        now(),
      );
      request.edge = { window };
      if (!window.allowed) {
        options.onRateLimited?.("public");
        throw rateLimited(window, now(), "this client");
      }
      return;
    }
    const header = request.headers.authorization;
    if (!header && options.sessions && request.url.startsWith("/v1/")) {
      const claims = options.sessions.read(request);
      if (claims === "invalid") {
        await refuse(request, "the dashboard session has expired; refresh it or sign in again");
      } else if (claims) {
        return admitSession(request, claims, config);
      }
    }
    if (!header) {
      await refuse(request, "missing API key: send Authorization: Bearer <key>");
    }
    // HTTP authentication schemes are case-insensitive (RFC 9110 11.1).
    const match = /^Bearer +(\S+)$/i.exec(header ?? "");
    if (!match) {
      await refuse(request, "the Authorization header must be Bearer <key>");
    }
    const key = match?.[1] ?? "";
    if (!isWellFormedApiKey(key)) {
      await refuse(request, "malformed API key");
    }
    const answer = await resolve(request, options.hashKey(key));
    if (answer.kind === "unknown") {
      return refuse(request, "unknown API key");
    }
    if (answer.kind === "revoked") {
      return refuse(request, "this API key has been revoked");
    }
    if (answer.kind === "inactive") {
      return refuse(request, "the subscription of this key's tenant has ended");
    }
    if (answer.kind !== "ok") {
      throw new ApiError("unavailable", "authentication state is being rebuilt; try again shortly");
    }
    admit(request, answer, config);
  });

  /**
   * A signed-in dashboard member: the same tenant window, quota facts, tier gate and headers as
   * the tenant's keys, and a CSRF token on every state-changing call.
   */
  async function admitSession(
    request: FastifyRequest,
    claims: SessionClaims,
    config: EdgeRouteConfig,
  ): Promise<void> {
    const sessions = options.sessions as EdgeSessions;
    let answer = await options.store.authorizeSession(claims, now());
    if (answer.kind === "miss") {
      const tenant = await sessions.tenantOf(claims.memberId, request.id);
      if (!tenant) {
        return refuse(request, "this member can no longer sign in to the dashboard");
      }
      await options.store.putTenant(tenant);
      answer = await options.store.authorizeSession(claims, now());
    }
    if (answer.kind === "revoked") {
      return refuse(request, "this dashboard session was signed out; sign in again");
    }
    if (answer.kind === "inactive") {
      return refuse(request, "the subscription of this tenant has ended");
    }
    if (answer.kind !== "ok") {
      throw new ApiError("unavailable", "authentication state is being rebuilt; try again shortly");
    }
    admit(request, answer, config, claims.sessionId);
    if (
      !SAFE_METHODS.has(request.method) &&
      !csrfMatches(request.headers[CSRF_HEADER], claims.csrf)
    ) {
      throw new ApiError(
        "forbidden",
        "missing or wrong X-CSRF-Token: state-changing dashboard calls must echo the session's CSRF token",
      );
    }
  }

  /** Sets the request's tenancy, window and quota facts, then applies the limit and the tier gate. */
  function admit(
    request: FastifyRequest,
    answer: Extract<Authorization, { kind: "ok" }>,
    config: EdgeRouteConfig,
    sessionId?: string,
  ): void {
    const tier = answer.tier as Tier;
    const tenancy: Tenancy = {
      tenantId: answer.tenantId,
      memberId: answer.memberId,
      keyId: answer.keyId,
      tier,
    };
    if (sessionId) {
      tenancy.sessionId = sessionId;
    }
    const admittedAt = now();
    const period = periods.at(answer.billingAnniversary, admittedAt);
    const quota: QuotaState = {
      limit: answer.leadViewsPerMonth,
      periodStart: period.start,
      resetsAt: period.end,
      admittedAt,
    };
    if (answer.leadViewsUsed !== undefined) {
      quota.remaining = Math.max(0, answer.leadViewsPerMonth - answer.leadViewsUsed);
    }
    request.edge = { tenancy, window: answer.window, quota };
    if (!answer.window.allowed) {
      options.onRateLimited?.("tenant");
      throw rateLimited(answer.window, now(), "this tenant (all of its keys together)");
    }
    const surface = config.surface ?? "rest";
    if (!tierOpens(tier, surface)) {
      throw new ApiError(
        "tier_required",
        `the ${TIERS[tier].label} tier does not include ${surface === "management" ? "the management API" : surface}; upgrade to ${TIERS[cheapestTierWith(surface)].label} or above`,
        { upgrade_url: upgradeUrlFor(options.upgradeUrl, tier, surface) },
      );
    }
  }

  // Every body that reaches the edge, on every method, is searched for a key as raw text before
  // any parser reads it: a member named twice cannot hide a key behind the one JSON keeps, and a
  // body no route reads (a GET's, a form's) has leaked the key as much as any. A request without
  // a body (most reads) passes without a promise.
  const bodyLimit = app.initialConfig.bodyLimit ?? 1_048_576;
  app.addHook("preParsing", (request, _reply, payload, done) => {
    if (!hasBody(request) || !passesEdge(request)) {
      done(null, payload);
      return;
    }
    readBody(payload, bodyLimit).then(
      (bytes) => {
        if (bodyHoldsKey(bytes.toString("latin1"))) {
          refuse(request, KEY_IN_BODY).catch((error: Error) => done(error, payload));
          return;
        }
        const replay = Readable.from([bytes]) as Readable & { receivedEncodedLength: number };
        replay.receivedEncodedLength = bytes.length;
        done(null, replay);
      },
      (error: Error) => done(error, payload),
    );
  });

  // No route reads text, so Fastify's own text/plain parser goes: such a body is 415 like any
  // other type no route reads (after the search above), not a 400 saying it is no object.
  app.removeContentTypeParser("text/plain");
  app.addContentTypeParser("*", { parseAs: "string" }, (request, _body, done) => {
    done(
      new ApiError(
        "unsupported_media_type",
        `Unsupported Media Type: ${request.headers["content-type"] ?? "none"}; send application/json`,
      ),
      undefined,
    );
  });

  // Most answers know every figure already (the authorization read the lead-view counter), so
  // the headers are set without a promise; only a counter missing from Redis is read here.
  app.addHook("onSend", (request, reply: FastifyReply, payload, done) => {
    const edge = request.edge;
    if (edge?.quota && edge.tenancy && edge.quota.remaining === undefined) {
      limitHeaders(request).then(
        (headers) => {
          reply.headers(headers);
          done(null, payload);
        },
        (error: Error) => done(error),
      );
      return;
    }
    reply.headers(headersOf(edge));
    done(null, payload);
  });

  /**
   * The six headers of a request: the rolling minute, and for a known tenant the month's
   * lead-views; where there is no window or no tenant, the values that say so (limit-headers.ts).
   * Routes that write the raw response themselves (MCP) call it just before.
   */
  async function limitHeaders(request: FastifyRequest): Promise<Record<string, string>> {
    const edge = request.edge;
    if (!edge) {
      return headersOf(undefined);
    }
    const quota = edge.quota;
    if (quota && edge.tenancy && quota.remaining === undefined) {
      quota.remaining = options.remainingLeadViews
        ? await options
            .remainingLeadViews(edge.tenancy, quota.limit, {
              start: quota.periodStart,
              end: quota.resetsAt,
            })
            .catch((error: unknown) => {
              // The headers must not fail the response; the next request reads the counter again.
              request.log.warn({ err: error }, "lead-view counter unavailable for headers");
              return quota.limit;
            })
        : quota.limit;
    }
    return headersOf(edge);
  }

  /** Every response carries all six, tenant or not (the spec's "every response"). */
  function headersOf(edge: EdgeContext | undefined): Record<string, string> {
    const window = edge?.window;
    const quota = edge?.quota;
    if (window && quota && edge.tenancy) {
      return {
        "x-ratelimit-limit": wholeNumberText(window.limit),
        "x-ratelimit-remaining": wholeNumberText(window.remaining),
        "x-ratelimit-reset": wholeNumberText(Math.ceil(window.resetAtMs / 1000)),
        "x-quota-lead-views-limit": wholeNumberText(quota.limit),
        "x-quota-lead-views-remaining": wholeNumberText(
          Math.max(0, quota.remaining ?? quota.limit),
        ),
        "x-quota-resets": periods.iso(quota.resetsAt),
      };
    }
    const at = now();
    const headers = window
      ? {
          "x-ratelimit-limit": wholeNumberText(window.limit),
          "x-ratelimit-remaining": wholeNumberText(window.remaining),
          "x-ratelimit-reset": wholeNumberText(Math.ceil(window.resetAtMs / 1000)),
        }
      : noWindowHeaders(at);
    return { ...headers, ...noQuotaHeaders(at) };
  }
  app.decorateRequest("limitHeaders", function limitHeadersOfRequest(this: FastifyRequest) {
    return limitHeaders(this);
  });
}

/**
 * A tenant's billing period changes once a day at most (anniversaries fall at 00:00 UTC), so it
 * is computed once per anniversary and UTC day rather than once per request; so is the
 * X-Quota-Resets text of each period end.
 */
function billingPeriods() {
  const DAY_MS = 86_400_000;
  const byAnniversary = new Map<string, { day: number; start: Date; end: Date }>();
  const isoOf = new WeakMap<Date, string>();
  return {
    at(anniversary: string, at: number): { start: Date; end: Date } {
      const day = Math.floor(at / DAY_MS);
      const cached = byAnniversary.get(anniversary);
      if (cached?.day === day) {
        return cached;
      }
      const anchor = new Date(`${anniversary}T00:00:00Z`);
      if (Number.isNaN(anchor.getTime())) {
        return billingPeriodAt(new Date(at), new Date(at));
      }
      const period = billingPeriodAt(anchor, new Date(day * DAY_MS));
      if (byAnniversary.size >= 4096) {
        byAnniversary.clear();
      }
      const entry = { day, start: period.start, end: period.end };
      byAnniversary.set(anniversary, entry);
      return entry;
    },
    iso(date: Date): string {
      let text = isoOf.get(date);
      if (text === undefined) {
        text = date.toISOString();
        isoOf.set(date, text);
      }
      return text;
    },
  };
}

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers["content-length"];
  return (
    (length !== undefined && length !== "0") || request.headers["transfer-encoding"] !== undefined
  );
}

/** The whole body, refused with 413 past the limit the parsers would apply. */
function readBody(stream: NodeJS.ReadableStream, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    stream.on("data", (chunk: Buffer) => {
      length += chunk.length;
      if (length > limit) {
        stream.removeAllListeners("data");
        stream.resume();
        reject(new ApiError("payload_too_large", `the body exceeds ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    stream.on("end", () => resolve(Buffer.concat(chunks, length)));
    stream.on("error", reject);
  });
}

/** `/v1/...` and the MCP endpoint pass the edge; probes and anything else do not exist there. */
function isEdgePath(url: string): boolean {
  return url.startsWith("/v1/") || url === "/v1" || url === "/mcp" || url.startsWith("/mcp?");
}

/**
 * `/v1`, `/mcp`, and a request for no route at all that carries a Bearer credential: a
 * tenant whose client mistypes a path (`/v2/leads`) gets the 404 with its six headers, like any
 * answer to a tenant, and a bad key there is a 401. Probes and the dashboard's pages do not.
 */
function passesEdge(request: FastifyRequest): boolean {
  return (
    isEdgePath(request.url) ||
    (request.is404 && /^Bearer /i.test(request.headers.authorization ?? ""))
  );
}

function csrfMatches(sent: string | string[] | undefined, expected: string): boolean {
  if (typeof sent !== "string") {
    return false;
  }
  const a = Buffer.from(sent);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The tenancy of an authenticated request; routes behind the edge can rely on it. */
export function tenancyOf(request: FastifyRequest): Tenancy {
  const tenancy = request.edge?.tenancy;
  if (!tenancy) {
    throw new ApiError("unauthorized", "authentication required");
  }
  return tenancy;
}
