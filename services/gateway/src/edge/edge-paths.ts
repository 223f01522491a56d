import { KEY_LIKE } from "@th/api-keys";
import type { FastifyRequest } from "fastify";

/** `/v1/...` and the MCP endpoint pass the edge; probes and anything else do not exist there. */
export function isEdgePath(url: string): boolean {
  return url.startsWith("/v1/") || url === "/v1" || url === "/mcp" || url.startsWith("/mcp?");
}

/**
 * The path the edge judges a request by: the declared path of the route that matched, never the
 * URL as sent, so `/%761/health` meets the guards of `/v1/health` (decision 0321). A request no
 * route matched is judged by its path in the one normal form the router reads too.
 */
export function edgePathOf(request: FastifyRequest): string {
  return request.routeOptions.url ?? request.url;
}

/**
 * `/v1`, `/mcp`, and a request for no route at all that carries a Bearer credential: a
 * tenant whose client mistypes a path (`/v2/leads`) gets the 404 with its six headers, like any
 * answer to a tenant, and a bad key there is a 401. Probes and the dashboard's pages do not.
 */
export function passesEdge(request: FastifyRequest): boolean {
  return (
    isEdgePath(edgePathOf(request)) ||
    (request.is404 && /^Bearer /i.test(request.headers.authorization ?? ""))
  );
}

/** Whether a request URL holds a key-shaped string, percent-encoded or not. */
export function urlHoldsKey(url: string): boolean {
  let text = url;
  if (text.includes("%")) {
    try {
      text = decodeURIComponent(text);
    } catch {
      // A malformed escape cannot hide a key from the raw test below.
    }
  }
  return KEY_LIKE.test(text);
}

/** Whether the request announces a body: a non-zero length or a chunked transfer. */
export function hasBody(request: FastifyRequest): boolean {
  const length = request.headers["content-length"];
  return (
    (length !== undefined && length !== "0") || request.headers["transfer-encoding"] !== undefined
  );
}
