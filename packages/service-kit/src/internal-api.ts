import { parseInternalCallerKeys } from "@th/config";
import type { FastifyRequest } from "fastify";
import type { HttpApp } from "./app.ts";
import { ApiError } from "./errors.ts";
import {
  bodyDigestOf,
  macMatches,
  NonceMemory,
  parseSignatureHeader,
  SIGNED_CALL_HEADERS,
} from "./internal-signature.ts";
import { rawBodyOf } from "./raw-body.ts";

/** Headers a caller sets on its calls to a service's internal API (signed: decision 0320). */
export const INTERNAL_HEADERS = {
  tenant: "x-th-tenant-id",
  member: "x-th-member-id",
  key: "x-th-key-id",
  tier: "x-th-tier",
  requestId: "x-th-request-id",
  /** On a lead answer: the folios of its leads, so a caller that meters them need not parse it. */
  folios: "x-th-folios",
} as const;

/** The `x-th-folios` value for these folios (each URI-encoded, comma-separated). */
export function foliosHeader(folios: readonly string[]): string {
  return folios.map(encodeURIComponent).join(",");
}

/** The folios an `x-th-folios` value names; undefined when the answer carries none. */
export function foliosFromHeader(value: string | string[] | undefined): string[] | undefined {
  if (typeof value !== "string") {
    return undefined;
  }
  return value.length === 0 ? [] : value.split(",").map(decodeURIComponent);
}

export interface SignedCallOptions {
  /** This service's name, as its callers' keys were derived for it. */
  service: string;
  /** `caller:key` pairs (`INTERNAL_CALLER_KEYS`): the callers this service accepts. */
  callerKeys: string;
  /** How far a call's timestamp may be from now, either way (30 s unless set). */
  windowMs?: number;
  now?: () => number;
}

/**
 * Every route of the app answers only calls signed by a caller it accepts (decision 0320). The
 * decision is taken on the route that matched, never on the raw URL: a percent-encoded path
 * reaches the same route and meets the same check. The signature names the route the caller
 * meant, so a parameter that happens to spell another route's literal segment (a folio named
 * `count`) is refused instead of reaching that route. A request that matches no route gets its
 * 404 and learns nothing else.
 */
export function requireSignedCalls(app: HttpApp, options: SignedCallOptions): void {
  const keys = parseInternalCallerKeys(options.callerKeys);
  if (keys === undefined) {
    throw new Error("INTERNAL_CALLER_KEYS must be comma-separated caller:key pairs");
  }
  const now = options.now ?? Date.now;
  const windowMs = options.windowMs ?? 30_000;
  const nonces = new NonceMemory(windowMs, now());
  app.addHook("onRequest", (request, _reply, done) => {
    const route = request.routeOptions.url;
    if (route === undefined) {
      done();
      return;
    }
    const problem = signedCallProblem(request, route, {
      service: options.service,
      keys,
      windowMs,
      nonces,
      now: now(),
    });
    done(
      problem === undefined ? undefined : new ApiError("unauthorized", `internal API: ${problem}`),
    );
  });
  // After the body is parsed, before it is validated: the body is the one that was signed.
  app.addHook("preValidation", (request, _reply, done) => {
    if (request.routeOptions.url === undefined) {
      done();
      return;
    }
    const signed = request.headers[SIGNED_CALL_HEADERS.bodyDigest];
    done(
      signed === bodyDigestOf(rawBodyOf(request))
        ? undefined
        : new ApiError("unauthorized", "internal API: the body is not the one that was signed"),
    );
  });
}

interface VerifyContext {
  service: string;
  keys: Map<string, string>;
  windowMs: number;
  nonces: NonceMemory;
  now: number;
}

/** Why a call is refused, or undefined when it is a fresh, unaltered call from an accepted caller. */
function signedCallProblem(
  request: FastifyRequest,
  route: string,
  context: VerifyContext,
): string | undefined {
  const header = (name: string) => {
    const value = request.headers[name];
    return typeof value === "string" ? value : "";
  };
  const caller = header(SIGNED_CALL_HEADERS.caller);
  const key = context.keys.get(caller);
  const signature = parseSignatureHeader(header(SIGNED_CALL_HEADERS.signature));
  if (key === undefined || signature === undefined) {
    return "the call is not signed by a caller this service accepts";
  }
  if (Math.abs(context.now - signature.at) > context.windowMs) {
    return "the call's signature has expired";
  }
  if (header(SIGNED_CALL_HEADERS.route) !== route) {
    return "the call was signed for another route";
  }
  const call = {
    caller,
    receiver: context.service,
    at: signature.at,
    nonce: signature.nonce,
    method: request.method,
    route,
    target: request.originalUrl ?? request.url,
    bodyDigest: header(SIGNED_CALL_HEADERS.bodyDigest),
    tenantId: header(INTERNAL_HEADERS.tenant),
    memberId: header(INTERNAL_HEADERS.member),
    keyId: header(INTERNAL_HEADERS.key),
    tier: header(INTERNAL_HEADERS.tier),
  };
  if (!macMatches(key, call, signature.mac)) {
    return "the call's signature does not match it";
  }
  // Last, so that a forged call cannot use up a nonce a real one will carry.
  return context.nonces.firstSight(`${caller}/${signature.nonce}`, context.now)
    ? undefined
    : "the call was already made once (a replay)";
}

export interface InternalCaller {
  tenantId: string;
  memberId: string;
  keyId: string;
}

/** The tenant, member and key the gateway authenticated for this call (covered by its signature). */
export function internalCaller(request: FastifyRequest): InternalCaller {
  const read = (name: string) => {
    const value = request.headers[name];
    if (typeof value !== "string" || value.length === 0) {
      throw new ApiError("unauthorized", `internal API: missing ${name}`);
    }
    return value;
  };
  return {
    tenantId: read(INTERNAL_HEADERS.tenant),
    memberId: read(INTERNAL_HEADERS.member),
    keyId: read(INTERNAL_HEADERS.key),
  };
}
