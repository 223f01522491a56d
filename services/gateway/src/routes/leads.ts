import {
  type Lead,
  leadLookupRequestSchema,
  leadLookupResponseSchema,
  leadPageSchema,
  leadSchema,
  leadSearchQuerySchema,
} from "@th/api-schemas";
import { errorResponses, type HttpApp } from "@th/service-kit";
import { z } from "zod";
import type { Upstream } from "../clients/keys-client.ts";
import type { Metering } from "../edge/metering.ts";
import { callAs, relay } from "./forward.ts";

const tags = ["leads"];
const security = [{ bearerAuth: [] }];
const paidErrors = errorResponses("unauthorized", "quota_exceeded", "rate_limited", "unavailable");

/**
 * Lead reads. Each parcel shown costs one lead-view per tenant and UTC day, on every surface;
 * only parcels that exist are charged, and a read the month's remaining views cannot cover is
 * refused whole with 402.
 */
export function registerLeadRoutes(
  app: HttpApp,
  deps: { parcels: Upstream; metering: Metering },
): void {
  app.get(
    "/v1/leads/:folio",
    {
      schema: {
        tags,
        security,
        operationId: "getLead",
        summary:
          "One lead by folio (county number + county parcel id, e.g. 23-3059010240130); one lead-view",
        params: z.object({ folio: z.string().min(1).max(64) }),
        response: { 200: leadSchema, ...paidErrors, ...errorResponses("not_found", "conflict") },
      },
    },
    async (request, reply) => {
      const upstream = await callAs(
        deps.parcels,
        request,
        "GET",
        `/internal/v1/parcels/${encodeURIComponent(request.params.folio)}`,
      );
      if (upstream.status !== 200) {
        return relay(reply, upstream);
      }
      const lead = upstream.body as Lead;
      await deps.metering.charge(request, [lead.folio], "rest");
      return lead;
    },
  );

  app.post(
    "/v1/leads/batch",
    {
      schema: {
        tags,
        security,
        operationId: "getLeadsBatch",
        summary:
          "Up to 100 leads at once; one lead-view per folio that exists, all or nothing against the quota",
        body: leadLookupRequestSchema,
        response: { 200: leadLookupResponseSchema, ...paidErrors },
      },
    },
    async (request, reply) => {
      const upstream = await callAs(
        deps.parcels,
        request,
        "POST",
        "/internal/v1/parcels/lookup",
        request.body,
      );
      if (upstream.status !== 200) {
        return relay(reply, upstream);
      }
      const page = upstream.body as z.infer<typeof leadLookupResponseSchema>;
      await deps.metering.charge(
        request,
        page.leads.map((lead) => lead.folio),
        "rest",
      );
      return page;
    },
  );

  app.get(
    "/v1/leads",
    {
      schema: {
        tags,
        security,
        operationId: "searchLeads",
        summary:
          "Search leads by county, city, ZIP, use class, signals, value and equity; 50 per page (200 at most), opaque cursor; one lead-view per lead returned",
        // A query string cannot be a shared component in OpenAPI; the same fields, inlined.
        querystring: z.object(leadSearchQuerySchema.shape),
        response: { 200: leadPageSchema, ...paidErrors },
      },
    },
    async (request, reply) => {
      const query = request.url.includes("?") ? request.url.slice(request.url.indexOf("?")) : "";
      const upstream = await callAs(deps.parcels, request, "GET", `/internal/v1/parcels${query}`);
      if (upstream.status !== 200) {
        return relay(reply, upstream);
      }
      const page = upstream.body as z.infer<typeof leadPageSchema>;
      await deps.metering.charge(
        request,
        page.leads.map((lead) => lead.folio),
        "rest",
      );
      return page;
    },
  );
}
