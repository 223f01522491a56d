import { TIERS } from "@th/billing";
import type { Tier } from "@th/contracts";
import { inTransaction } from "@th/db";
import { ApiError } from "@th/service-kit";
import { seatShortfall, tenantView } from "../domain/tenants.ts";
import {
  type AccountsDeps,
  bumpTenant,
  type Caller,
  countActiveMembers,
  loadTenant,
  requireAdmin,
} from "./tenant-rows.ts";

/** Caps an operator may negotiate for a Custom tenant. */
type CustomLimits = Partial<{
  lead_views_per_month: number;
  rate_per_minute: number;
  concurrent_webhooks: number;
  seats: number;
}>;

/** The tenant's subscription: its tier, negotiated caps and cancellation. */
export function createSubscription(deps: AccountsDeps) {
  const { pool, payments, now } = deps;

  return {
    async getTenant(caller: Caller) {
      return tenantView(await loadTenant(pool, caller.tenantId));
    },

    /**
     * Moves the tenant to another tier; new caps apply from the next request. Asking for the tier
     * the tenant has changes nothing (a Custom tenant keeps its negotiated caps), and a tier with
     * fewer seats than the tenant has members is refused until members are removed.
     */
    async changeTier(caller: Caller, tier: Tier) {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        const tenant = await loadTenant(client, caller.tenantId, true);
        if (tenant.status === "cancelled") {
          throw new ApiError("conflict", "a cancelled subscription cannot change tier");
        }
        if (tier === tenant.tier) {
          return tenantView(tenant);
        }
        const shortfall = seatShortfall(await countActiveMembers(client, tenant.id), tier);
        if (shortfall) {
          throw new ApiError("seat_limit_reached", shortfall);
        }
        // The processor's price moves first, under the row lock: a move that failed there changes
        // nothing here, and a retry after a failure here reuses the move's idempotency key.
        const moved = tenant.payment_subscription_ref
          ? await payments.moveTier({
              tenantId: tenant.id,
              subscriptionRef: tenant.payment_subscription_ref,
              tier,
              revision: tenant.revision,
            })
          : null;
        const limits = TIERS[tier].limits;
        await client.query(
          `UPDATE tenants SET tier = $2, seats = $3, lead_views_per_month = $4, rate_per_minute = $5,
             concurrent_webhooks = $6, next_charge_at = coalesce($7, next_charge_at) WHERE id = $1`,
          [
            tenant.id,
            tier,
            limits.seats,
            limits.lead_views_per_month,
            limits.rate_per_minute,
            limits.concurrent_webhooks,
            moved?.nextChargeAt ?? null,
          ],
        );
        return tenantView(await bumpTenant(client, { ...tenant, tier }, now));
      });
    },

    /**
     * Operators set a Custom tenant's negotiated caps (the tier table gives only its floor).
     * Not reachable from the public API.
     */
    async setCustomLimits(tenantId: string, limits: CustomLimits) {
      return inTransaction(pool, async (client) => {
        const tenant = await loadTenant(client, tenantId, true);
        if (tenant.tier !== "custom") {
          throw new ApiError("conflict", "only Custom tenants have negotiated limits");
        }
        const next = { ...tenant, ...limits };
        await client.query(
          `UPDATE tenants SET seats = $2, lead_views_per_month = $3, rate_per_minute = $4, concurrent_webhooks = $5
           WHERE id = $1`,
          [
            tenantId,
            next.seats,
            next.lead_views_per_month,
            next.rate_per_minute,
            next.concurrent_webhooks,
          ],
        );
        return tenantView(await bumpTenant(client, next, now));
      });
    },

    /**
     * Cancels at any time: the processor's subscription is cancelled at once, so nothing more
     * is charged (during the trial, nothing ever is).
     */
    async cancel(caller: Caller) {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        const tenant = await loadTenant(client, caller.tenantId, true);
        if (tenant.status !== "cancelled" && tenant.payment_subscription_ref) {
          await payments.cancel({
            tenantId: tenant.id,
            subscriptionRef: tenant.payment_subscription_ref,
          });
        }
        if (tenant.status !== "cancelled") {
          await client.query(
            "UPDATE tenants SET status = 'cancelled', cancelled_at = $2, next_charge_at = NULL WHERE id = $1",
            [tenant.id, now()],
          );
        }
        return tenantView(await bumpTenant(client, tenant, now));
      });
    },
  };
}
