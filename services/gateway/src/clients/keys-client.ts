import type { TenantChanged } from "@th/contracts";
import { ApiError, INTERNAL_HEADERS } from "@th/service-kit";

export interface Identity {
  tenantId: string;
  memberId: string;
  keyId: string;
  tier: string;
}

export interface UpstreamReply {
  status: number;
  body: unknown;
}

export interface KeyLookup {
  key_id: string;
  tenant_id: string;
  member_id: string;
  revoked: boolean;
  tenant: TenantChanged;
}

/** Calls a service's internal API on behalf of an authenticated caller. */
export function createUpstream(options: {
  baseUrl: string;
  internalToken: string;
  timeoutMs: number;
}) {
  async function send(
    method: string,
    path: string,
    context: { identity?: Identity; requestId: string; body?: unknown },
  ): Promise<UpstreamReply> {
    const headers: Record<string, string> = {
      [INTERNAL_HEADERS.token]: options.internalToken,
      [INTERNAL_HEADERS.requestId]: context.requestId,
      "x-request-id": context.requestId,
    };
    if (context.identity) {
      headers[INTERNAL_HEADERS.tenant] = context.identity.tenantId;
      headers[INTERNAL_HEADERS.member] = context.identity.memberId;
      headers[INTERNAL_HEADERS.key] = context.identity.keyId;
      headers[INTERNAL_HEADERS.tier] = context.identity.tier;
    }
    if (context.body !== undefined) {
      headers["content-type"] = "application/json";
    }
    let response: Response;
    try {
      response = await fetch(`${options.baseUrl}${path}`, {
        method,
        headers,
        signal: AbortSignal.timeout(options.timeoutMs),
        ...(context.body !== undefined ? { body: JSON.stringify(context.body) } : {}),
      });
    } catch {
      throw new ApiError("unavailable", "a backing service did not answer; try again shortly");
    }
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  }
  return { send };
}

export type Upstream = ReturnType<typeof createUpstream>;

export function createKeysClient(upstream: Upstream) {
  return {
    upstream,
    async lookup(keyHash: string, requestId: string): Promise<KeyLookup | null> {
      const reply = await upstream.send("GET", `/internal/v1/keys/by-hash/${keyHash}`, {
        requestId,
      });
      if (reply.status === 404) {
        return null;
      }
      if (reply.status !== 200) {
        throw new ApiError("unavailable", "key lookup failed; try again shortly");
      }
      return reply.body as KeyLookup;
    },
  };
}

export type KeysClient = ReturnType<typeof createKeysClient>;
