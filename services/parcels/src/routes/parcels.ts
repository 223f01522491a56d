import {
  getLead,
  getLeadsBatch,
  type Lead,
  leadLookupResponseSchema,
  leadPageSchema,
  leadSchema,
  leadSearchQuerySchema,
  requestSchemas,
  searchLeads,
} from "@th/api-schemas";
import type { Pool } from "@th/db";
import {
  ApiError,
  errorResponses,
  foliosHeader,
  type HttpApp,
  INTERNAL_HEADERS,
} from "@th/service-kit";
import { z } from "zod";
import {
  countParcels,
  decodeCursor,
  encodeCursor,
  exportFolios,
  findByFolios,
  findByParcelId,
  searchParcels,
} from "../db/parcel-queries.ts";
import type { StoredParcel } from "../db/parcel-store.ts";
import { toLead } from "../domain/lead.ts";
import { parseFolio } from "../domain/parcel.ts";

const leadOf = (parcel: StoredParcel): Lead => toLead(parcel.event, parcel.detail);

/**
 * Resolves what a caller calls a folio: a full folio first; else a bare county PARCEL_ID when
 * exactly one county has it. Ambiguous ids answer with the candidates.
 */
async function resolveOne(pool: Pool, requested: string): Promise<StoredParcel | null> {
  if (parseFolio(requested)) {
    const found = (await findByFolios(pool, [requested])).get(requested);
    if (found) {
      return found;
    }
  }
  const candidates = await findByParcelId(pool, requested);
  if (candidates.length > 1) {
    throw new ApiError(
      "conflict",
      `parcel id ${requested} exists in ${candidates.length} counties; ask by folio: ${candidates.map((candidate) => candidate.event.folio).join(", ")}`,
    );
  }
  return candidates[0] ?? null;
}

/**
 * The internal read API the gateway calls for lead reads. Every call is signed by its caller
 * (decision 0320); metering and tenant checks happen at the gateway before the call. The reads behind the
 * public lead operations sit at those operations' internal paths in the operation table
 * (`@th/api-schemas`); a parcel read takes a folio as given and a search has no polling mode,
 * so only the batch shares the public request schema.
 */
export function registerParcelRoutes(app: HttpApp, deps: { pool: Pool }) {
  const { pool } = deps;

  app.get(
    getLead.internalPath,
    {
      schema: {
        tags: ["parcels"],
        operationId: "getParcel",
        summary: "One lead by folio, or by a bare county parcel id when only one county has it",
        params: z.object({ folio: z.string().min(1).max(64) }),
        response: { 200: leadSchema, ...errorResponses("unauthorized", "not_found", "conflict") },
      },
    },
    async (request, reply) => {
      const parcel = await resolveOne(pool, request.params.folio);
      if (!parcel) {
        throw new ApiError("not_found", `no parcel ${request.params.folio}`);
      }
      reply.header(INTERNAL_HEADERS.folios, foliosHeader([parcel.event.folio]));
      return leadOf(parcel);
    },
  );

  app.post(
    getLeadsBatch.internalPath,
    {
      schema: {
        tags: ["parcels"],
        operationId: "lookupParcels",
        summary: "The leads among up to 100 folios that exist",
        ...requestSchemas(getLeadsBatch),
        response: { 200: leadLookupResponseSchema, ...errorResponses("unauthorized") },
      },
    },
    async (request, reply) => {
      const requested = [...new Set(request.body.folios)];
      const found = await findByFolios(pool, requested);
      const leads: Lead[] = [];
      const missing: string[] = [];
      const ambiguous: { requested: string; folios: string[] }[] = [];
      const seen = new Set<string>();
      for (const folio of requested) {
        let parcel = found.get(folio);
        if (!parcel) {
          // A bare parcel id counts only when one county has it; otherwise the caller hears
          // which folios it could mean, as a single read's 409 says.
          const candidates = await findByParcelId(pool, folio);
          if (candidates.length > 1) {
            ambiguous.push({
              requested: folio,
              folios: candidates.map((candidate) => candidate.event.folio),
            });
            continue;
          }
          parcel = candidates[0];
        }
        if (!parcel) {
          missing.push(folio);
        } else if (!seen.has(parcel.event.folio)) {
          seen.add(parcel.event.folio);
          leads.push(leadOf(parcel));
        }
      }
      reply.header(INTERNAL_HEADERS.folios, foliosHeader([...seen]));
      return { leads, missing, ambiguous };
    },
  );
  registerParcelSearchRoutes(app, pool);
}

/** The searches behind lead search, export pricing and the dashboard: counts and pages. */
function registerParcelSearchRoutes(app: HttpApp, pool: Pool) {
  app.get(
    "/internal/v1/parcels/count",
    {
      schema: {
        tags: ["parcels"],
        operationId: "countParcels",
        summary: "How many leads a search matches, counting no further than at_most",
        querystring: leadSearchQuerySchema.omit({ cursor: true, limit: true }).extend({
          at_most: z.coerce
            .number()
            .int()
            .min(1)
            .optional()
            .describe("Stop counting here (the export's max_rows); capped at the export ceiling"),
        }),
        response: { 200: z.object({ count: z.number().int() }), ...errorResponses("unauthorized") },
      },
    },
    async (request) => {
      const { at_most: atMost, ...filters } = request.query;
      return { count: await countParcels(pool, filters, atMost) };
    },
  );

  app.get(
    "/internal/v1/parcels/folios",
    {
      schema: {
        tags: ["parcels"],
        operationId: "exportFolios",
        summary:
          "The folios an export of a search writes, in order, no further than at_most: what prices it by its new lead-views",
        querystring: leadSearchQuerySchema.omit({ cursor: true, limit: true }).extend({
          at_most: z.coerce
            .number()
            .int()
            .min(1)
            .describe("The export's rows; capped at the ceiling"),
        }),
        response: {
          200: z.object({ folios: z.array(z.string()) }),
          ...errorResponses("unauthorized"),
        },
      },
    },
    async (request) => {
      const { at_most: atMost, ...filters } = request.query;
      return { folios: await exportFolios(pool, filters, atMost) };
    },
  );

  app.get(
    searchLeads.internalPath,
    {
      schema: {
        tags: ["parcels"],
        operationId: "searchParcels",
        summary: "Leads matching every filter, in folio order, one page at a time",
        querystring: leadSearchQuerySchema,
        response: { 200: leadPageSchema, ...errorResponses("unauthorized") },
      },
    },
    async (request) => {
      const { cursor, ...filters } = request.query;
      const after = cursor === undefined ? null : decodeCursor(cursor);
      if (cursor !== undefined && after === null) {
        throw new ApiError(
          "invalid_request",
          "invalid querystring: cursor is not one this API issued",
          {
            fields: [{ path: "querystring.cursor", message: "is not a cursor this API issued" }],
          },
        );
      }
      const ranges = [
        ["min_just_value", "max_just_value"],
        ["min_equity", "max_equity"],
      ] as const;
      for (const [min, max] of ranges) {
        const low = filters[min];
        const high = filters[max];
        if (low !== undefined && high !== undefined && low > high) {
          throw new ApiError("invalid_request", `invalid querystring: ${min} is above ${max}`, {
            fields: [{ path: `querystring.${min}`, message: `must not exceed ${max}` }],
          });
        }
      }
      const page = await searchParcels(pool, { ...filters, after });
      return {
        leads: page.parcels.map(leadOf),
        next_cursor: page.more && page.lastFolio !== null ? encodeCursor(page.lastFolio) : null,
      };
    },
  );
}
