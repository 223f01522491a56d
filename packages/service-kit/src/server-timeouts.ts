import type { Server } from "node:http";

/**
 * How long a server waits on a client. Node bounds the receipt of a request only: the answer,
 * however long it streams (a 100,000-row CSV export), is not cut by these (docs/decisions/0340).
 */
export interface ServerTimeouts {
  /** The request line and every header must have arrived within this. */
  headersMs: number;
  /** The whole request, body included, must have arrived within this. */
  requestMs: number;
  /** A kept-alive connection with no request in flight is closed after this long idle. */
  keepAliveMs: number;
}

export const DEFAULT_SERVER_TIMEOUTS: ServerTimeouts = {
  headersMs: 10_000,
  requestMs: 30_000,
  keepAliveMs: 5_000,
};

/** The timeouts a service's settings name (`httpServerShape` of `@th/config`). */
export function serverTimeoutsOf(config: {
  HTTP_HEADERS_TIMEOUT_MS: number;
  HTTP_REQUEST_TIMEOUT_MS: number;
  HTTP_KEEP_ALIVE_TIMEOUT_MS: number;
}): ServerTimeouts {
  return {
    headersMs: config.HTTP_HEADERS_TIMEOUT_MS,
    requestMs: config.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveMs: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
  };
}

/** Node reads this when the server starts listening; it is not in its type declarations. */
type CheckedServer = Server & { connectionsCheckingInterval: number };

/**
 * Sets the bounds on a server before it listens. Node looks for requests past their bound only
 * every `connectionsCheckingInterval` (30 s unless set), which would let a slow client hold its
 * socket that much longer than the bound says; here it looks every second.
 */
export function applyServerTimeouts(server: Server, timeouts: ServerTimeouts): void {
  if (server.listening) {
    throw new Error("server timeouts must be applied before the server listens");
  }
  if (timeouts.headersMs > timeouts.requestMs) {
    throw new Error("the headers timeout must not exceed the request timeout");
  }
  server.headersTimeout = timeouts.headersMs;
  server.requestTimeout = timeouts.requestMs;
  server.keepAliveTimeout = timeouts.keepAliveMs;
  (server as CheckedServer).connectionsCheckingInterval = Math.min(1_000, timeouts.headersMs);
}
