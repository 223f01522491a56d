import { isUtcDay, utcDayOf } from "@th/contracts";
import { ApiError, errorResponses, type HttpApp } from "@th/service-kit";
import { z } from "zod";
import type { Ledger } from "../db/ledger.ts";
import type { Tenants } from "../db/tenants.ts";
import { currentPeriod } from "../domain/period.ts";

const utcDay = z.string().refine(isUtcDay, { message: "must be a UTC day written YYYY-MM-DD" });
const tenantParams = z.object({ tenant_id: z.string().min(1).max(64) });

const seedQuery = z.object({ period_start: utcDay, day: utcDay });
const seedResponse = z.object({
  used: z.number().int(),
  folios_today: z.array(z.string()),
  caught_up: z.boolean(),
});

const usageQuery = z.object({ at: z.iso.datetime({ offset: true }).optional() });
const usageResponse = z.object({
  tenant_id: z.string(),
  period_start: z.string(),
  period_end: z.string(),
  cap: z.number().int(),
  used: z.number().int(),
  daily: z.array(z.object({ day: z.string(), lead_views: z.number().int() })),
});

export interface UsageRouteDeps {
  ledger: Ledger;
  tenants: Tenants;
  /** Waits until the ledger has read every lead-view already recorded for the tenant. */
  catchUp(tenantId: string): Promise<boolean>;
  now(): Date;
}

/** What the gateway asks the ledger: figures to seed its Redis meter with, and period usage. */
export function registerInternalUsageRoutes(app: HttpApp, deps: UsageRouteDeps): void {
  app.get(
    "/internal/v1/usage/:tenant_id/seed",
    {
      schema: {
        params: tenantParams,
        querystring: seedQuery,
        response: { 200: seedResponse, ...errorResponses("invalid_request", "unauthorized") },
      },
    },
    async (request) => {
      const { tenant_id: tenantId } = request.params;
      // Waiting first means a seed after a Redis flush never hands back views the ledger has
      // not read yet; when the wait times out the gateway is told, not silently undercounted.
      const caughtUp = await deps.catchUp(tenantId);
      const figures = await deps.ledger.seedFigures(
        tenantId,
        request.query.period_start,
        request.query.day,
      );
      return { used: figures.used, folios_today: figures.foliosToday, caught_up: caughtUp };
    },
  );

  app.get(
    "/internal/v1/usage/:tenant_id",
    {
      schema: {
        params: tenantParams,
        querystring: usageQuery,
        response: {
          200: usageResponse,
          ...errorResponses("invalid_request", "unauthorized", "not_found"),
        },
      },
    },
    async (request) => {
      const { tenant_id: tenantId } = request.params;
      const tenant = await deps.tenants.find(tenantId);
      if (!tenant) {
        throw new ApiError("not_found", `no tenant ${tenantId} is known to the quota ledger`);
      }
      const at = request.query.at ? new Date(request.query.at) : deps.now();
      const period = currentPeriod(tenant.billingAnniversary, at);
      const periodStart = utcDayOf(period.start);
      const usage = await deps.ledger.periodUsage(tenantId, periodStart);
      return {
        tenant_id: tenantId,
        period_start: period.start.toISOString(),
        period_end: period.end.toISOString(),
        cap: tenant.leadViewsPerMonth,
        used: usage.used,
        daily: usage.daily,
      };
    },
  );
}
