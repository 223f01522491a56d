import { errorResponses, type HttpApp } from "@th/service-kit";
import { z } from "zod";
import { tenancyOf } from "../edge/authenticate.ts";

const meSchema = z
  .object({
    tenant_id: z.string(),
    member_id: z.string(),
    key_id: z.string(),
    tier: z.enum(["starter", "operator", "team", "custom"]),
  })
  .meta({ id: "Me" });

/** Who the key belongs to: the cheapest way for a client to check its key and limits. */
export function registerMeRoute(app: HttpApp): void {
  app.get(
    "/v1/me",
    {
      schema: {
        tags: ["account"],
        security: [{ bearerAuth: [] }],
        operationId: "whoAmI",
        summary: "The tenant, member and key behind this API key; free, answered by the edge alone",
        response: { 200: meSchema, ...errorResponses("unauthorized", "rate_limited") },
      },
    },
    async (request) => {
      const tenancy = tenancyOf(request);
      return {
        tenant_id: tenancy.tenantId,
        member_id: tenancy.memberId,
        key_id: tenancy.keyId,
        tier: tenancy.tier,
      };
    },
  );
}
