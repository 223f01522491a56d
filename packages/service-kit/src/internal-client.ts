import { internalCallerKey } from "@th/config";
import { injectContext } from "@th/telemetry";
import { Pool } from "undici";
import { ApiError } from "./errors.ts";
import { INTERNAL_HEADERS } from "./internal-api.ts";
import {
  bodyDigestOf,
  nextNonce,
  SIGNED_CALL_HEADERS,
  signatureHeader,
} from "./internal-signature.ts";

/** Who a call is made for: the tenant, member and key the gateway authenticated. */
export interface InternalIdentity {
  tenantId: string;
  memberId: string;
  keyId: string;
  tier?: string;
}

export interface InternalCall {
  /**
   * The receiver's route pattern when the path holds parameters
   * (`/internal/v1/parcels/by-folio/:folio`); the path without its query when not given. The receiver
   * refuses a call that matched any other route.
   */
  route?: string;
  identity?: InternalIdentity;
  /** The public request's id, carried so both services' logs name the same request. */
  requestId?: string;
  /** Sent as JSON. */
  body?: unknown;
  headers?: Record<string, string>;
}

export interface InternalReply<T = unknown> {
  status: number;
  /** The parsed JSON answer; undefined when the answer had no body. */
  body: T;
}

export interface InternalClientOptions {
  /** The service's internal API, e.g. http://parcels:8080. */
  baseUrl: string;
  /** Who signs the calls: this service's name and signing root, and the receiving service. */
  signing: InternalSigning;
  /** Bounds the wait for the answer's headers, and then each wait for more of its body. */
  timeoutMs: number;
  /** Keep-alive connections to the service at most (32 unless set). */
  connections?: number;
}

export interface InternalSigning {
  caller: string;
  /** The caller's `INTERNAL_SIGNING_SECRET`; the key for `receiver` is derived from it. */
  root: string;
  receiver: string;
}

/** An answer as the service wrote it, for a caller that passes a body through unchanged. */
export interface InternalText {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

export interface InternalClient {
  send<T = unknown>(method: string, path: string, call?: InternalCall): Promise<InternalReply<T>>;
  sendText(method: string, path: string, call?: InternalCall): Promise<InternalText>;
  /** Closes the pool's connections once the calls in flight have their answers. */
  close(): Promise<void>;
}

/**
 * The one client for services' internal APIs: a keep-alive connection pool per upstream (a call
 * reuses a warm socket instead of WHATWG fetch's streams and a new timer signal each time),
 * bounded timeouts, a signature over the call and the caller's identity (decision 0320), the
 * request id and the trace context on every call. A service that does not answer is `unavailable`, the closed error set's
 * code for a backing service; what a service does answer is returned for the caller to judge.
 */
export function createInternalClient(options: InternalClientOptions): InternalClient {
  const base = new URL(options.baseUrl);
  const prefix = base.pathname.replace(/\/$/, "");
  const pool = new Pool(base.origin, {
    connections: options.connections ?? 32,
    connectTimeout: options.timeoutMs,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    keepAliveTimeout: 30_000,
  });

  const signingKey = internalCallerKey(options.signing.root, options.signing.receiver);

  function headersOf(method: string, path: string, call: InternalCall, body: string | undefined) {
    const identity = call.identity;
    const bodyDigest = bodyDigestOf(body);
    // Signed as the receiver sees them: nothing between may rewrite an internal URL.
    const target = `${prefix}${path}`;
    const route = `${prefix}${call.route ?? path.split("?", 1)[0] ?? path}`;
    const headers: Record<string, string> = {
      ...call.headers,
      [SIGNED_CALL_HEADERS.caller]: options.signing.caller,
      [SIGNED_CALL_HEADERS.route]: route,
      [SIGNED_CALL_HEADERS.bodyDigest]: bodyDigest,
      [SIGNED_CALL_HEADERS.signature]: signatureHeader(signingKey, {
        caller: options.signing.caller,
        receiver: options.signing.receiver,
        at: Date.now(),
        nonce: nextNonce(),
        method,
        route,
        target,
        bodyDigest,
        tenantId: identity?.tenantId ?? "",
        memberId: identity?.memberId ?? "",
        keyId: identity?.keyId ?? "",
        tier: identity?.tier ?? "",
      }),
    };
    if (call.requestId !== undefined) {
      headers[INTERNAL_HEADERS.requestId] = call.requestId;
      headers["x-request-id"] = call.requestId;
    }
    if (identity) {
      headers[INTERNAL_HEADERS.tenant] = identity.tenantId;
      headers[INTERNAL_HEADERS.member] = identity.memberId;
      headers[INTERNAL_HEADERS.key] = identity.keyId;
      if (identity.tier !== undefined) {
        headers[INTERNAL_HEADERS.tier] = identity.tier;
      }
    }
    if (body !== undefined) {
      headers["content-type"] = "application/json";
    }
    // A no-op unless tracing is on; then the service's spans continue this request's trace.
    return injectContext(headers);
  }

  async function sendText(method: string, path: string, call: InternalCall = {}) {
    const body = call.body !== undefined ? JSON.stringify(call.body) : undefined;
    try {
      const response = await pool.request({
        method: method as "GET",
        path: `${prefix}${path}`,
        headers: headersOf(method, path, call, body),
        body: body ?? null,
      });
      const text = await response.body.text();
      return { status: response.statusCode, headers: response.headers, text };
    } catch {
      throw new ApiError("unavailable", "a backing service did not answer; try again shortly");
    }
  }

  return {
    sendText,
    async send<T>(method: string, path: string, call: InternalCall = {}) {
      const { status, text } = await sendText(method, path, call);
      return { status, body: parseInternalJson<T>(text) };
    },
    close: () => pool.close(),
  };
}

/** An internal answer's JSON; undefined for an empty body. */
export function parseInternalJson<T = unknown>(text: string): T {
  if (text.length === 0) {
    return undefined as T;
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    // Internal APIs answer JSON only; anything else came from something in between.
    throw new ApiError("unavailable", "a backing service gave no usable answer; try again");
  }
}
