import { errorResponses, type HttpApp, type InternalClient } from "@th/service-kit";
import { z } from "zod";
import { tenancyOf } from "../edge/authenticate.ts";
import { relay } from "./forward.ts";

const usageSchema = z
  .object({
    period_start: z
      .string()
      .describe("Start of the current billing month (UTC day of the anniversary)"),
    period_end: z.string().describe("The next billing anniversary, when lead-views reset"),
    cap: z.number().int(),
    used: z.number().int(),
    remaining: z.number().int(),
    daily: z.array(z.object({ day: z.string(), lead_views: z.number().int() })),
  })
  .meta({ id: "Usage" });

/** The month's lead-view usage; free, so it keeps working when the quota is exhausted. */
export function registerUsageRoute(app: HttpApp, deps: { ledger: InternalClient }): void {
  app.get(
    "/v1/usage",
    {
      schema: {
        tags: ["account"],
        security: [{ bearerAuth: [] }],
        operationId: "getUsage",
        summary: "Lead-views used and remaining this billing month, with daily counts",
        response: {
          200: usageSchema,
          ...errorResponses("unauthorized", "rate_limited", "unavailable"),
        },
      },
    },
    async (request, reply) => {
      const tenancy = tenancyOf(request);
      const upstream = await deps.ledger.send(
        "GET",
        `/internal/v1/usage/${encodeURIComponent(tenancy.tenantId)}`,
        {
          route: "/internal/v1/usage/:tenant_id",
          identity: tenancy,
          requestId: request.id,
        },
      );
      if (upstream.status !== 200) {
        return relay(reply, upstream);
      }
      const body = upstream.body as Omit<z.infer<typeof usageSchema>, "remaining">;
      return { ...body, remaining: Math.max(0, body.cap - body.used) };
    },
  );
}
