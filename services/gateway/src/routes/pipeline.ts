// The pipeline's public operations. Adding a parcel is a lead read the gateway charges
// (pipeline-add.ts); everything else is free and keeps working when the quota is exhausted. The
// keys service holds members and roles: stage changes need an admin, and an assignee must be a
// member of the caller's account, checked here before the pipeline is called.

import { Readable } from "node:stream";
import {
  addPipelineItem,
  addPipelineItemsBatch,
  bodyIssues,
  createPipelineStage,
  exportPipelineCsv,
  getPipelineItem,
  getPipelineItemHistory,
  listMembers,
  listPipelineItems,
  listPipelineStages,
  movePipelineItem,
  type PipelineItemSummary,
  type PipelineStage,
  removePipelineItem,
  updatePipelineItem,
  updatePipelineStage,
} from "@th/api-schemas";
import { ApiError, type HttpApp, type InternalClient } from "@th/service-kit";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import { pipelineCsvHeader, pipelineCsvRow } from "../domain/pipeline-csv.ts";
import { tenancyOf } from "../edge/authenticate.ts";
import { callAs, relay } from "./forward.ts";
import { callOwner, forwardOperation, type PublicOperation, publicRoute } from "./operation.ts";
import { addMany, addOne, type PipelineAddDeps } from "./pipeline-add.ts";

export interface PipelineDeps extends PipelineAddDeps {
  keys: InternalClient;
}

const EXPORT_PAGE = 200;

/** A body that fails its schema is answered naming every failing path, before any call. */
function refuseInvalidBody(request: FastifyRequest, schema: z.ZodType): void {
  if (!request.validationError) {
    return;
  }
  const issues = bodyIssues(schema, request.body);
  if (issues === undefined) {
    throw request.validationError;
  }
  throw new ApiError("invalid_request", issues.message, { fields: issues.fields });
}

/** The caller's account's members, with their roles, from the keys service. */
async function membersOf(deps: PipelineDeps, request: FastifyRequest) {
  const answer = await callAs(deps.keys, request, "GET", listMembers.internalPath);
  if (answer.status !== 200) {
    throw new ApiError("unavailable", "the account's members could not be read; try again shortly");
  }
  return (answer.body as { data: { id: string; role: "admin" | "member" }[] }).data;
}

async function requireAdmin(deps: PipelineDeps, request: FastifyRequest): Promise<void> {
  const me = tenancyOf(request).memberId;
  const members = await membersOf(deps, request);
  if (members.find((member) => member.id === me)?.role !== "admin") {
    throw new ApiError(
      "forbidden",
      "only an admin of the account may change the pipeline's stages",
    );
  }
}

/** Refuses an assignee who is not a member of the caller's account; null unassigns. */
async function requireMember(
  deps: PipelineDeps,
  request: FastifyRequest,
  assigneeId: string | null | undefined,
): Promise<void> {
  if (assigneeId === undefined || assigneeId === null) {
    return;
  }
  const members = await membersOf(deps, request);
  if (!members.some((member) => member.id === assigneeId)) {
    throw new ApiError(
      "invalid_request",
      "invalid body: assignee_id names no member of this account",
      {
        fields: [{ path: "body.assignee_id", message: "names no member of this account" }],
      },
    );
  }
}

export function registerPipelineRoutes(app: HttpApp, deps: PipelineDeps): void {
  forwardOperation(app, listPipelineStages, deps.pipeline);
  registerChecked(app, deps, createPipelineStage, (request) => requireAdmin(deps, request));
  registerChecked(app, deps, updatePipelineStage, (request) => requireAdmin(deps, request));
  forwardOperation(app, listPipelineItems, deps.pipeline);
  registerAddRoutes(app, deps);
  forwardOperation(app, getPipelineItem, deps.pipeline);
  registerChecked(app, deps, updatePipelineItem, (request) =>
    requireMember(deps, request, (request.body as { assignee_id?: string | null }).assignee_id),
  );
  registerChecked(app, deps, movePipelineItem, async () => {});
  forwardOperation(app, removePipelineItem, deps.pipeline);
  forwardOperation(app, getPipelineItemHistory, deps.pipeline);
  registerPipelineExport(app, deps);
}

/** An operation with a body, checked here, then the owner's answer unchanged. */
function registerChecked(
  app: HttpApp,
  deps: PipelineDeps,
  operation: PublicOperation & { body: z.ZodType },
  check: (request: FastifyRequest) => Promise<void>,
): void {
  app.route({
    method: operation.method,
    url: operation.path,
    ...publicRoute(operation),
    attachValidation: true,
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      refuseInvalidBody(request, operation.body);
      await check(request);
      return relay(reply, await callOwner(deps.pipeline, operation, request));
    },
  });
}

function registerAddRoutes(app: HttpApp, deps: PipelineDeps): void {
  app.post(
    addPipelineItem.path,
    { ...publicRoute(addPipelineItem), attachValidation: true },
    async (request, reply) => {
      refuseInvalidBody(request, addPipelineItem.body);
      await requireMember(deps, request, request.body.assignee_id);
      return relay(reply, await addOne(deps, request, request.body, "rest"));
    },
  );
  app.post(
    addPipelineItemsBatch.path,
    { ...publicRoute(addPipelineItemsBatch), attachValidation: true },
    async (request, reply) => {
      refuseInvalidBody(request, addPipelineItemsBatch.body);
      await requireMember(deps, request, request.body.assignee_id);
      return relay(reply, await addMany(deps, request, request.body, "rest"));
    },
  );
}

/**
 * The pipeline as CSV, streamed a page at a time as the client reads it. Free: it shows the
 * leads as stored when the items were added, so it costs no lead-views and works with the quota
 * exhausted.
 */
function registerPipelineExport(app: HttpApp, deps: PipelineDeps): void {
  app.get(exportPipelineCsv.path, publicRoute(exportPipelineCsv), async (request, reply) => {
    const stages = await callAs(deps.pipeline, request, "GET", listPipelineStages.internalPath);
    if (stages.status !== 200) {
      return relay(reply, stages);
    }
    const names = new Map(
      (stages.body as { data: PipelineStage[] }).data.map((stage) => [stage.id, stage.name]),
    );
    const query = new URLSearchParams(
      request.url.includes("?") ? request.url.slice(request.url.indexOf("?") + 1) : "",
    );
    const date = new Date().toISOString().slice(0, 10);
    return reply
      .type("text/csv; charset=utf-8")
      .header("content-disposition", `attachment; filename="pipeline-${date}.csv"`)
      .send(Readable.from(pipelineLines(deps, request, query, names)));
  });
}

/** The header row, then every item the filters keep, oldest added first, page by page. */
async function* pipelineLines(
  deps: PipelineDeps,
  request: FastifyRequest,
  filters: URLSearchParams,
  stageNames: Map<string, string>,
) {
  yield pipelineCsvHeader();
  let cursor: string | null = null;
  do {
    const query = new URLSearchParams(filters);
    query.set("sort", "added_at");
    query.set("limit", String(EXPORT_PAGE));
    if (cursor !== null) {
      query.set("cursor", cursor);
    }
    const page = await callAs(deps.pipeline, request, "GET", {
      path: `${listPipelineItems.internalPath}?${query}`,
      route: listPipelineItems.internalPath,
    });
    if (page.status !== 200) {
      throw new Error(`pipeline export page failed with ${page.status}`);
    }
    const body = page.body as { data: PipelineItemSummary[]; next_cursor: string | null };
    yield body.data
      .map((item) => pipelineCsvRow(item, stageNames.get(item.stage_id) ?? ""))
      .join("");
    cursor = body.next_cursor;
  } while (cursor !== null);
}
