import { secretsEqual } from "@th/api-keys";
import type { FastifyRequest } from "fastify";
import type { HttpApp } from "./app.ts";
import { ApiError } from "./errors.ts";

/** Headers the gateway sets on its calls to a service's internal API. */
export const INTERNAL_HEADERS = {
  token: "x-th-internal-token",
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

/**
 * Refuses any call under `/internal/` that lacks the shared internal token. The internal port
 * is not exposed outside the cluster; the token is the second lock.
 */
export function requireInternalToken(app: HttpApp, token: string): void {
  app.addHook("onRequest", async (request) => {
    if (!request.url.startsWith("/internal/")) {
      return;
    }
    const presented = request.headers[INTERNAL_HEADERS.token];
    if (typeof presented !== "string" || !secretsEqual(presented, token)) {
      throw new ApiError("unauthorized", "internal API: missing or wrong internal token");
    }
  });
}

export interface InternalCaller {
  tenantId: string;
  memberId: string;
  keyId: string;
}

/** The tenant, member and key the gateway authenticated for this call. */
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
