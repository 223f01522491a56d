import type { LedgerUsage, Period, UsageLoader } from "./meter.ts";

/**
 * How a service asks the quota ledger's internal API: a GET of `path`, which reaches `route` there
 * (the call is signed for it), answered as status and body.
 */
export type LedgerGet = (
  path: string,
  tenantId: string,
  route: string,
) => Promise<{ status: number; body: unknown }>;

const SEED_ROUTE = "/internal/v1/usage/:tenant_id/seed";

/**
 * The quota ledger's figures for re-seeding a tenant's lead-view counter when Redis has lost it
 * (`GET /internal/v1/usage/:tenant_id/seed`). A ledger that has not caught up with every recorded
 * view is refused like an unavailable one: seeding from it would give views away. `unavailable`
 * makes the error the caller's surface answers with (a 503 at the edge).
 */
export function ledgerUsageLoader(options: {
  get: LedgerGet;
  unavailable: (detail: string) => Error;
}): UsageLoader {
  return async (tenantId: string, period: Period, day: string): Promise<LedgerUsage> => {
    const query = new URLSearchParams({
      period_start: period.start.toISOString().slice(0, 10),
      day,
    });
    const reply = await options.get(
      `/internal/v1/usage/${encodeURIComponent(tenantId)}/seed?${query}`,
      tenantId,
      SEED_ROUTE,
    );
    if (reply.status !== 200) {
      throw options.unavailable("lead-view usage is unavailable; try again shortly");
    }
    const body = reply.body as { used: number; folios_today: string[]; caught_up: boolean };
    if (!body.caught_up) {
      throw options.unavailable("lead-view usage is being recovered; try again shortly");
    }
    return { used: body.used, foliosToday: body.folios_today };
  };
}
