// The items of the caller's pipeline. The gateway calls as the authenticated caller; every query
// is scoped to the caller's tenant, so another tenant's item answers 404 like one that does not
// exist. A change carries the version the client read and answers 409 when it is stale.
import {
  addPipelineItem,
  addPipelineItemsBatch,
  getPipelineItem,
  getPipelineItemHistory,
  listPipelineItems,
  movePipelineItem,
  PIPELINE_PRESENT_PATH,
  pipelineBatchAddInternalSchema,
  pipelineItemAddInternalSchema,
  pipelinePresentRequestSchema,
  pipelinePresentResponseSchema,
  removePipelineItem,
  requestSchemas,
  updatePipelineItem,
} from "@th/api-schemas";
import { ApiError, errorResponses, type HttpApp, internalCaller } from "@th/service-kit";
import type { ItemReads } from "../db/item-reads.ts";
import type { ItemStore } from "../db/items.ts";
import { actorOf, checkBody } from "./request-body.ts";

interface ItemRouteDeps {
  items: ItemStore;
  reads: ItemReads;
}

export function registerItemRoutes(app: HttpApp, deps: ItemRouteDeps): void {
  registerReads(app, deps.reads);
  registerAdds(app, deps);
  registerChanges(app, deps);
}

function registerReads(app: HttpApp, reads: ItemReads): void {
  app.get(
    listPipelineItems.internalPath,
    {
      schema: {
        ...requestSchemas(listPipelineItems),
        response: { ...listPipelineItems.responses, ...errorResponses("unauthorized") },
      },
    },
    async (request) => reads.list(internalCaller(request).tenantId, request.query),
  );
  app.get(
    getPipelineItem.internalPath,
    {
      schema: {
        ...requestSchemas(getPipelineItem),
        response: { ...getPipelineItem.responses, ...errorResponses("unauthorized", "not_found") },
      },
    },
    async (request) => reads.get(internalCaller(request).tenantId, request.params.item_id),
  );
  app.get(
    getPipelineItemHistory.internalPath,
    {
      schema: {
        ...requestSchemas(getPipelineItemHistory),
        response: {
          ...getPipelineItemHistory.responses,
          ...errorResponses("unauthorized", "not_found"),
        },
      },
    },
    async (request) =>
      reads.history(internalCaller(request).tenantId, request.params.item_id, request.query),
  );
  app.post(
    PIPELINE_PRESENT_PATH,
    {
      schema: {
        body: pipelinePresentRequestSchema,
        response: { 200: pipelinePresentResponseSchema, ...errorResponses("unauthorized") },
      },
    },
    async (request) => ({
      present: await reads.present(internalCaller(request).tenantId, request.body.folios),
    }),
  );
}

function registerAdds(app: HttpApp, deps: ItemRouteDeps): void {
  app.post(
    addPipelineItem.internalPath,
    {
      attachValidation: true,
      schema: {
        body: pipelineItemAddInternalSchema,
        response: { ...addPipelineItem.responses, ...errorResponses("unauthorized", "conflict") },
      },
    },
    async (request, reply) => {
      checkBody(request, pipelineItemAddInternalSchema);
      const actor = actorOf(request);
      const { lead, folio: _folio, stage_id, ...fields } = request.body;
      const { added } = await deps.items.add(actor, [lead], {
        stageId: stage_id,
        assigneeId: fields.assignee_id ?? null,
        tags: fields.tags ?? [],
        followUpOn: fields.follow_up_on ?? null,
        note: fields.note,
      });
      const item = added[0];
      if (item === undefined) {
        throw new ApiError("conflict", `the pipeline already holds ${lead.folio}`);
      }
      return reply.status(201).send(await deps.reads.get(actor.tenantId, item.id));
    },
  );
  app.post(
    addPipelineItemsBatch.internalPath,
    {
      attachValidation: true,
      schema: {
        body: pipelineBatchAddInternalSchema,
        response: {
          ...addPipelineItemsBatch.responses,
          ...errorResponses("unauthorized", "conflict"),
        },
      },
    },
    async (request) => {
      checkBody(request, pipelineBatchAddInternalSchema);
      const actor = actorOf(request);
      const { leads, stage_id, ...fields } = request.body;
      const { added, already } = await deps.items.add(actor, leads, {
        stageId: stage_id,
        assigneeId: fields.assignee_id ?? null,
        tags: fields.tags ?? [],
        followUpOn: fields.follow_up_on ?? null,
      });
      const ids = new Set(added.map((item) => item.id));
      const listed = await deps.reads.byIds(actor.tenantId, [...ids]);
      return { added: listed, already_in_pipeline: already, missing: [] };
    },
  );
}

function registerChanges(app: HttpApp, deps: ItemRouteDeps): void {
  app.patch(
    updatePipelineItem.internalPath,
    {
      attachValidation: true,
      schema: {
        ...requestSchemas(updatePipelineItem),
        response: {
          ...updatePipelineItem.responses,
          ...errorResponses("unauthorized", "not_found", "conflict"),
        },
      },
    },
    async (request) => {
      checkBody(request, updatePipelineItem.body);
      const actor = actorOf(request);
      const { version, ...update } = request.body;
      await deps.items.update(actor, request.params.item_id, version, update);
      return deps.reads.get(actor.tenantId, request.params.item_id);
    },
  );
  app.post(
    movePipelineItem.internalPath,
    {
      attachValidation: true,
      schema: {
        ...requestSchemas(movePipelineItem),
        response: {
          ...movePipelineItem.responses,
          ...errorResponses("unauthorized", "not_found", "conflict"),
        },
      },
    },
    async (request) => {
      checkBody(request, movePipelineItem.body);
      const actor = actorOf(request);
      const { version, stage_id } = request.body;
      await deps.items.move(actor, request.params.item_id, version, stage_id);
      const [card] = await deps.reads.byIds(actor.tenantId, [request.params.item_id]);
      if (card === undefined) {
        throw new ApiError("not_found", `no pipeline item ${request.params.item_id}`);
      }
      return card;
    },
  );
  app.delete(
    removePipelineItem.internalPath,
    {
      schema: {
        ...requestSchemas(removePipelineItem),
        response: {
          ...removePipelineItem.responses,
          ...errorResponses("unauthorized", "not_found", "conflict"),
        },
      },
    },
    async (request, reply) => {
      await deps.items.remove(actorOf(request), request.params.item_id, request.query.version);
      return reply.status(204).send(null);
    },
  );
}
