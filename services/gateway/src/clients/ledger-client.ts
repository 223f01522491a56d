import type { Period, UsageLoader } from "@th/quota";
import { utcDay } from "@th/quota";
import { ApiError, type InternalClient } from "@th/service-kit";

/** The ledger's figures for re-seeding the lead-view counters when Redis has lost them. */
export function ledgerUsageLoader(upstream: InternalClient): UsageLoader {
  return async (tenantId: string, period: Period, day: string) => {
    const query = new URLSearchParams({ period_start: utcDay(period.start), day });
    const reply = await upstream.send(
      "GET",
      `/internal/v1/usage/${encodeURIComponent(tenantId)}/seed?${query}`,
      { requestId: `seed_${tenantId}` },
    );
    if (reply.status !== 200) {
      throw new ApiError("unavailable", "lead-view usage is unavailable; try again shortly");
    }
    const body = reply.body as { used: number; folios_today: string[]; caught_up: boolean };
    if (!body.caught_up) {
      // Seeding from a ledger that has not seen every recorded view would give views away.
      throw new ApiError("unavailable", "lead-view usage is being recovered; try again shortly");
    }
    return { used: body.used, foliosToday: body.folios_today };
  };
}
