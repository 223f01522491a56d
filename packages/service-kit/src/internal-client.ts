import { injectContext } from "@th/telemetry";
import { Pool } from "undici";
import { ApiError } from "./errors.ts";
import { INTERNAL_HEADERS } from "./internal-api.ts";

/** Who a call is made for: the tenant, member and key the gateway authenticated. */
export interface InternalIdentity {
  tenantId: string;
  memberId: string;
  keyId: string;
  tier?: string;
}

export interface InternalCall {
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
  internalToken: string;
  /** Bounds the wait for the answer's headers, and then each wait for more of its body. */
  timeoutMs: number;
  /** Keep-alive connections to the service at most (32 unless set). */
  connections?: number;
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
 * bounded timeouts, the internal token, the caller's identity, the request id and the trace
 * context on every call. A service that does not answer is `unavailable`, the closed error set's
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

  function headersOf(call: InternalCall, hasBody: boolean): Record<string, string> {
    const headers: Record<string, string> = {
      ...call.headers,
      [INTERNAL_HEADERS.token]: options.internalToken,
    };
    if (call.requestId !== undefined) {
      headers[INTERNAL_HEADERS.requestId] = call.requestId;
      headers["x-request-id"] = call.requestId;
    }
    const identity = call.identity;
    if (identity) {
      headers[INTERNAL_HEADERS.tenant] = identity.tenantId;
      headers[INTERNAL_HEADERS.member] = identity.memberId;
      headers[INTERNAL_HEADERS.key] = identity.keyId;
      if (identity.tier !== undefined) {
        headers[INTERNAL_HEADERS.tier] = identity.tier;
      }
    }
    if (hasBody) {
      headers["content-type"] = "application/json";
    }
    // A no-op unless tracing is on; then the service's spans continue this request's trace.
    return injectContext(headers);
  }

  async function sendText(method: string, path: string, call: InternalCall = {}) {
    const hasBody = call.body !== undefined;
    try {
      const response = await pool.request({
        method: method as "GET",
        path: `${prefix}${path}`,
        headers: headersOf(call, hasBody),
        body: hasBody ? JSON.stringify(call.body) : null,
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
