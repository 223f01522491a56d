import { ApiError } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import type { Redis } from "ioredis";
import { tenancyOf } from "./edge-context.ts";
import { rateLimited } from "./rate-limit.ts";
import { tenantCalls } from "./store/tenant-calls.ts";

/** What a request's further calls were granted. */
export interface BatchCharge {
  /** How many of the further calls the tenant's rolling minute allowed: the first ones. */
  allowed: number;
  /** The refusal the calls past `allowed` answer, with the wait; null when all were allowed. */
  refusal: ReturnType<typeof rateLimited> | null;
}

/**
 * A request that carries several calls (a JSON-RPC batch on MCP) costs each of them in the
 * tenant's rolling minute, like as many requests: the edge charged the request as one, and this
 * charges the others, so a batch is no way around the per-minute limit. The request's window,
 * and so its X-RateLimit headers, then show every call (decision 0342).
 */
export function createBatchCharge(redis: Redis, now: () => number) {
  const store = tenantCalls(redis);
  return async function chargeFurtherCalls(
    request: FastifyRequest,
    calls: number,
  ): Promise<BatchCharge> {
    if (calls <= 0) {
      return { allowed: 0, refusal: null };
    }
    const tenancy = tenancyOf(request);
    const edge = request.edge;
    if (!edge?.window) {
      // Admission sets a tenant's window with its tenancy; without one nothing may pass.
      throw new ApiError("unauthorized", "authentication required");
    }
    const at = now();
    const charged = await store.chargeCalls(tenancy.tenantId, edge.window.limit, calls, at);
    edge.window = charged.window;
    return {
      allowed: charged.allowed,
      refusal:
        charged.allowed < calls
          ? rateLimited(charged.window, at, "this tenant (all of its keys together)")
          : null,
    };
  };
}

export type ChargeFurtherCalls = ReturnType<typeof createBatchCharge>;
