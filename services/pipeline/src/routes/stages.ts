// The stages of the caller's pipeline. Only the gateway calls, having checked that the caller is
// an admin of the tenant for a change (the keys service holds the roles).
import {
  createPipelineStage,
  listPipelineStages,
  requestSchemas,
  updatePipelineStage,
} from "@th/api-schemas";
import { errorResponses, type HttpApp, internalCaller } from "@th/service-kit";
import type { StageStore } from "../db/stages.ts";
import { stageView } from "../domain/stages.ts";
import { checkBody } from "./request-body.ts";

export function registerStageRoutes(app: HttpApp, stages: StageStore): void {
  app.get(
    listPipelineStages.internalPath,
    {
      schema: {
        ...requestSchemas(listPipelineStages),
        response: { ...listPipelineStages.responses, ...errorResponses("unauthorized") },
      },
    },
    async (request) => ({
      data: (await stages.list(internalCaller(request).tenantId)).map(stageView),
    }),
  );

  app.post(
    createPipelineStage.internalPath,
    {
      attachValidation: true,
      schema: {
        ...requestSchemas(createPipelineStage),
        response: {
          ...createPipelineStage.responses,
          ...errorResponses("unauthorized", "conflict"),
        },
      },
    },
    async (request, reply) => {
      checkBody(request, createPipelineStage.body);
      const created = await stages.create(internalCaller(request), request.body);
      return reply.status(201).send(stageView(created));
    },
  );

  app.patch(
    updatePipelineStage.internalPath,
    {
      attachValidation: true,
      schema: {
        ...requestSchemas(updatePipelineStage),
        response: {
          ...updatePipelineStage.responses,
          ...errorResponses("unauthorized", "not_found", "conflict"),
        },
      },
    },
    async (request) => {
      checkBody(request, updatePipelineStage.body);
      const caller = internalCaller(request);
      return stageView(await stages.update(caller, request.params.stage_id, request.body));
    },
  );
}
