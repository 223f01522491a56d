import type { Tier } from "@th/contracts";
import { ApiError } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import type { BillingPeriods } from "./billing-periods.ts";
import type { EdgeContext, EdgeRouteConfig, QuotaState, Tenancy } from "./edge-context.ts";
import type { EdgeOptions } from "./edge-options.ts";
import type { Admitted } from "./key-authentication.ts";
import { rateLimited } from "./rate-limit.ts";
import { readsSuspended, suspendedReads } from "./suspension.ts";
import { tierRefusal } from "./tier-gate.ts";

/**
 * What the edge knows of an admitted request: its tenancy, its rolling minute, and its month's
 * lead-views as of the moment it was admitted.
 */
export function edgeContextOf(
  answer: Admitted,
  admittedAt: number,
  period: { start: Date; end: Date },
  sessionId?: string,
): EdgeContext {
  const tenancy: Tenancy = {
    tenantId: answer.tenantId,
    memberId: answer.memberId,
    keyId: answer.keyId,
    tier: answer.tier as Tier,
  };
  if (sessionId) {
    tenancy.sessionId = sessionId;
  }
  if (readsSuspended(answer.status)) {
    tenancy.suspended = true;
  }
  const quota: QuotaState = {
    limit: answer.leadViewsPerMonth,
    periodStart: period.start,
    resetsAt: period.end,
    admittedAt,
  };
  if (answer.leadViewsUsed !== undefined) {
    quota.remaining = Math.max(0, answer.leadViewsPerMonth - answer.leadViewsUsed);
  }
  return { tenancy, window: answer.window, quota };
}

type AdmissionOptions = Pick<EdgeOptions, "upgradeUrl" | "onRateLimited">;

/**
 * Admits a request whose key or session Redis answered for: sets its tenancy, window and quota
 * facts, then applies the tenant's rolling minute and the route's tier gate. A suspended tenant
 * is refused a route that costs lead-views before anything is read for it.
 */
export function createAdmission(
  options: AdmissionOptions,
  now: () => number,
  periods: BillingPeriods,
) {
  return function admit(
    request: FastifyRequest,
    answer: Admitted,
    config: EdgeRouteConfig,
    sessionId?: string,
  ): void {
    const admittedAt = now();
    const period = periods.at(answer.billingAnniversary, admittedAt);
    request.edge = edgeContextOf(answer, admittedAt, period, sessionId);
    if (!answer.window.allowed) {
      options.onRateLimited?.("tenant");
      throw rateLimited(answer.window, now(), "this tenant (all of its keys together)");
    }
    const refusal = tierRefusal(answer.tier as Tier, config.surface ?? "rest", options.upgradeUrl);
    if (refusal) {
      throw refusal;
    }
    if (config.leadViews && request.edge?.tenancy?.suspended) {
      throw suspendedReads();
    }
    if (config.sessionOnly && !sessionId) {
      throw new ApiError(
        "forbidden",
        "this operation belongs to the web dashboard and answers a signed-in session only; with an API key, use the management API (/v1/team/...)",
      );
    }
  };
}

export type Admit = ReturnType<typeof createAdmission>;
