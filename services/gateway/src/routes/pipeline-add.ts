// Adding parcels to the pipeline is a lead read: their leads are read, the folios the pipeline
// does not hold yet are charged (one lead-view each unless viewed this UTC day, all or nothing
// against the quota), and the leads go to the pipeline as the snapshots. REST and MCP add alike.
import {
  addPipelineItem,
  addPipelineItemsBatch,
  getLeadsBatch,
  type Lead,
  type leadLookupResponseSchema,
  PIPELINE_PRESENT_PATH,
  type pipelineBatchAddSchema,
  type pipelineItemAddSchema,
} from "@th/api-schemas";
import type { Surface } from "@th/contracts";
import { ApiError, type InternalClient, type InternalReply } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import type { z } from "zod";
import type { Metering } from "../edge/metering.ts";
import { callAs } from "./forward.ts";

export interface PipelineAddDeps {
  pipeline: InternalClient;
  parcels: InternalClient;
  metering: Metering;
}

type AddBody = z.infer<typeof pipelineItemAddSchema>;
type BatchBody = z.infer<typeof pipelineBatchAddSchema>;
type Lookup = z.infer<typeof leadLookupResponseSchema>;

function unavailable(what: string): ApiError {
  return new ApiError(
    "unavailable",
    `${what} did not answer; nothing was charged, try again shortly`,
  );
}

/** The leads of these folios, and the folios that name no single parcel. */
async function readLeads(deps: PipelineAddDeps, request: FastifyRequest, folios: string[]) {
  const found = await callAs(deps.parcels, request, "POST", getLeadsBatch.internalPath, { folios });
  if (found.status !== 200) {
    throw unavailable("the parcel store");
  }
  const body = found.body as Lookup;
  return {
    leads: body.leads,
    missing: [...body.missing, ...body.ambiguous.map((each) => each.requested)],
  };
}

/** Which of these folios the tenant's pipeline holds already: adding them again costs nothing. */
async function heldFolios(deps: PipelineAddDeps, request: FastifyRequest, leads: Lead[]) {
  if (leads.length === 0) {
    return new Set<string>();
  }
  const answer = await callAs(deps.pipeline, request, "POST", PIPELINE_PRESENT_PATH, {
    folios: leads.map((lead) => lead.folio),
  });
  if (answer.status !== 200) {
    throw unavailable("the pipeline");
  }
  return new Set((answer.body as { present: { folio: string }[] }).present.map((row) => row.folio));
}

/**
 * Adds one parcel: 404 when no parcel has the folio and 409 when the pipeline holds it, both
 * free; else one lead read charged, then the pipeline's answer (201 with the item).
 */
export async function addOne(
  deps: PipelineAddDeps,
  request: FastifyRequest,
  body: AddBody,
  surface: Surface,
): Promise<InternalReply> {
  const { leads, missing } = await readLeads(deps, request, [body.folio]);
  const lead = leads[0];
  if (lead === undefined || missing.length > 0) {
    throw new ApiError("not_found", `no single parcel has the folio ${body.folio}`);
  }
  if ((await heldFolios(deps, request, [lead])).has(lead.folio)) {
    throw new ApiError("conflict", `the pipeline already holds ${lead.folio}`);
  }
  await deps.metering.charge(request, [lead.folio], surface);
  return callAs(deps.pipeline, request, "POST", addPipelineItem.internalPath, {
    ...body,
    folio: lead.folio,
    lead,
  });
}

/**
 * Adds many parcels, priced like a batch read: only the folios that exist and that the pipeline
 * does not hold are charged, all or nothing (402 and nothing added when the quota cannot cover
 * them).
 */
export async function addMany(
  deps: PipelineAddDeps,
  request: FastifyRequest,
  body: BatchBody,
  surface: Surface,
) {
  const { folios, ...fields } = body;
  const { leads, missing } = await readLeads(deps, request, [...new Set(folios)]);
  const held = await heldFolios(deps, request, leads);
  const fresh = leads.filter((lead) => !held.has(lead.folio));
  const result = { added: [] as unknown[], already_in_pipeline: [...held], missing };
  if (fresh.length === 0) {
    return { status: 200, body: result };
  }
  await deps.metering.charge(
    request,
    fresh.map((lead) => lead.folio),
    surface,
  );
  const added = await callAs(deps.pipeline, request, "POST", addPipelineItemsBatch.internalPath, {
    ...fields,
    leads: fresh,
  });
  if (added.status !== 200) {
    return added;
  }
  const answer = added.body as { added: unknown[]; already_in_pipeline: string[] };
  return {
    status: 200,
    body: {
      added: answer.added,
      already_in_pipeline: [...held, ...answer.already_in_pipeline],
      missing,
    },
  };
}
