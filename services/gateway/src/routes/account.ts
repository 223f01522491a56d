import { cancelSubscription, changeTier, getAccount } from "@th/api-schemas";
import type { HttpApp, InternalClient } from "@th/service-kit";
import { tenancyOf } from "../edge/authenticate.ts";
import type { EdgeStore } from "../edge/edge-store.ts";
import { relay } from "./forward.ts";
import { callOwner, forwardOperation, publicRoute } from "./operation.ts";

/** The tenant's own subscription; open on every tier so a Starter tenant can upgrade. */
export function registerAccountRoutes(
  app: HttpApp,
  deps: { keys: InternalClient; store: EdgeStore },
): void {
  forwardOperation(app, getAccount, deps.keys);

  app.post(changeTier.path, publicRoute(changeTier), async (request, reply) => {
    const upstream = await callOwner(deps.keys, changeTier, request);
    if (upstream.status === 200) {
      // The cached caps are dropped so the next request reads the new ones.
      await deps.store.forgetTenant(tenancyOf(request).tenantId);
      // This answer's headers already speak of the new tier.
      const caps = upstream.body as { rate_per_minute: number; lead_views_per_month: number };
      const edge = request.edge;
      if (edge?.window) {
        edge.window = {
          ...edge.window,
          limit: caps.rate_per_minute,
          remaining: Math.max(0, caps.rate_per_minute - edge.window.count),
        };
      }
      if (edge?.quota) {
        // The remaining figure is read again against the new cap: the old one may have been
        // clamped at zero (more used than a lower cap allows), which says nothing of the use.
        const { remaining: _stale, ...quota } = edge.quota;
        edge.quota = { ...quota, limit: caps.lead_views_per_month };
      }
    }
    return relay(reply, upstream);
  });

  app.post(cancelSubscription.path, publicRoute(cancelSubscription), async (request, reply) => {
    const upstream = await callOwner(deps.keys, cancelSubscription, request);
    if (upstream.status === 200) {
      await deps.store.forgetTenant(tenancyOf(request).tenantId);
    }
    return relay(reply, upstream);
  });
}
