import { changeTierBodySchema, tenantSchema } from "@th/api-schemas";
import { errorResponses, type HttpApp, type InternalClient } from "@th/service-kit";
import { tenancyOf } from "../edge/authenticate.ts";
import type { EdgeStore } from "../edge/edge-store.ts";
import { callAs, relay } from "./forward.ts";

const tags = ["account"];
const security = [{ bearerAuth: [] }];

/** The tenant's own subscription; open on every tier so a Starter tenant can upgrade. */
export function registerAccountRoutes(
  app: HttpApp,
  deps: { keys: InternalClient; store: EdgeStore },
): void {
  app.get(
    "/v1/account",
    {
      schema: {
        tags,
        security,
        operationId: "getAccount",
        summary: "The tenant: tier, caps, trial end, billing anniversary",
        response: { 200: tenantSchema, ...errorResponses("unauthorized", "rate_limited") },
      },
    },
    async (request, reply) =>
      relay(reply, await callAs(deps.keys, request, "GET", "/internal/v1/tenant")),
  );

  app.post(
    "/v1/account/tier",
    {
      schema: {
        tags,
        security,
        operationId: "changeTier",
        summary:
          "Upgrade or downgrade; the new caps apply from the next request. A tier with fewer seats than the tenant has members is 409 until members are removed; asking for the current tier changes nothing",
        body: changeTierBodySchema,
        response: {
          200: tenantSchema,
          ...errorResponses(
            "unauthorized",
            "forbidden",
            "seat_limit_reached",
            "conflict",
            "rate_limited",
          ),
        },
      },
    },
    async (request, reply) => {
      const upstream = await callAs(
        deps.keys,
        request,
        "POST",
        "/internal/v1/tenant/tier",
        request.body,
      );
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
    },
  );

  app.post(
    "/v1/account/cancel",
    {
      schema: {
        tags,
        security,
        operationId: "cancelSubscription",
        summary: "Cancel at any time; nothing is charged during the trial",
        response: {
          200: tenantSchema,
          ...errorResponses("unauthorized", "forbidden", "rate_limited"),
        },
      },
    },
    async (request, reply) => {
      const upstream = await callAs(deps.keys, request, "POST", "/internal/v1/tenant/cancel");
      if (upstream.status === 200) {
        await deps.store.forgetTenant(tenancyOf(request).tenantId);
      }
      return relay(reply, upstream);
    },
  );
}
