// The pipeline's MCP tools, with the same key, limits and quota as REST: list the pipeline
// (free), add a parcel (a lead read: one lead-view unless viewed this UTC day) and move an item
// (free, at the version read).
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import {
  listPipelineItems,
  listPipelineStages,
  movePipelineItem,
  PIPELINE_SORTS,
  pipelineItemAddSchema,
  pipelineItemMoveSchema,
} from "@th/api-schemas";
import { ApiError, ERROR_STATUS, type ErrorCode, toApiError } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import { callAs } from "./forward.ts";
import { ownerTarget } from "./operation.ts";
import { addOne, type PipelineAddDeps } from "./pipeline-add.ts";

/** The owner's error answer as the same error, so a tool reports 409 as 409. */
function ownerFailure(status: number, body: unknown): ApiError {
  const shaped = body as { error?: string; detail?: string } | undefined;
  const code = shaped?.error;
  if (code !== undefined && code in ERROR_STATUS && status < 500) {
    return new ApiError(code as ErrorCode, shaped?.detail ?? code);
  }
  return new ApiError("unavailable", "the pipeline did not answer; try again shortly");
}

function result(structured: Record<string, unknown>): CallToolResult {
  return {
    content: [{ type: "text", text: JSON.stringify(structured) }],
    structuredContent: structured,
  };
}

function failure(error: unknown): CallToolResult {
  return {
    isError: true,
    content: [{ type: "text", text: JSON.stringify(toApiError(error).body()) }],
  };
}

async function call(
  deps: PipelineAddDeps,
  request: FastifyRequest,
  method: string,
  target: { path: string; route: string },
  body?: unknown,
) {
  const answer = await callAs(deps.pipeline, request, method, target, body);
  if (answer.status >= 300) {
    throw ownerFailure(answer.status, answer.body);
  }
  return answer.body as Record<string, unknown>;
}

export function registerPipelineTools(
  server: McpServer,
  request: FastifyRequest,
  deps: PipelineAddDeps,
): void {
  registerListTool(server, request, deps);
  registerAddTool(server, request, deps);
  registerMoveTool(server, request, deps);
}

function registerListTool(server: McpServer, request: FastifyRequest, deps: PipelineAddDeps) {
  server.registerTool(
    "list_pipeline",
    {
      title: "List the pipeline",
      description:
        "The tenant's pipeline: its stages in board order, and its items (folio, stage, assignee, tags, next follow-up, notes count, version, and the lead as stored when added), filtered and a page at a time. Free, also when the lead-view quota is exhausted.",
      inputSchema: {
        stage_id: z.string().min(1).max(64).optional(),
        assignee_id: z.string().min(1).max(64).optional().describe("A member id, or none"),
        tag: z.string().min(1).max(40).optional(),
        follow_up_due: z.iso.date().optional().describe("Follow-ups on or before this day"),
        q: z.string().min(2).max(64).optional().describe("Text in folio, address or owner"),
        sort: z.enum(PIPELINE_SORTS).default("-updated_at"),
        cursor: z.string().max(256).optional(),
        limit: z.number().int().min(1).max(100).default(25),
      },
      outputSchema: {
        stages: z.array(z.record(z.string(), z.unknown())),
        items: z.array(z.record(z.string(), z.unknown())),
        next_cursor: z.string().nullable(),
      },
    },
    async (input) => {
      try {
        const query = new URLSearchParams();
        for (const [name, value] of Object.entries(input)) {
          if (value !== undefined) {
            query.set(name, String(value));
          }
        }
        const stages = await call(deps, request, "GET", ownerTarget(listPipelineStages, {}));
        const page = await call(deps, request, "GET", ownerTarget(listPipelineItems, {}, query));
        return result({ stages: stages.data, items: page.data, next_cursor: page.next_cursor });
      } catch (error) {
        return failure(error);
      }
    },
  );
}

function registerAddTool(server: McpServer, request: FastifyRequest, deps: PipelineAddDeps) {
  const add = pipelineItemAddSchema.shape;
  server.registerTool(
    "add_to_pipeline",
    {
      title: "Add a parcel to the pipeline",
      description:
        "Put a parcel (by folio) into the pipeline, in the first stage unless one is named, keeping its lead as read now. A lead read: costs one lead-view unless this parcel was already read today (UTC); a folio already in the pipeline is refused (conflict) and costs nothing.",
      inputSchema: {
        folio: add.folio,
        stage_id: add.stage_id,
        tags: add.tags,
        follow_up_on: add.follow_up_on,
        note: add.note,
      },
      outputSchema: { item: z.record(z.string(), z.unknown()) },
    },
    async (input) => {
      try {
        const answer = await addOne(deps, request, input, "mcp");
        if (answer.status !== 201) {
          throw ownerFailure(answer.status, answer.body);
        }
        return result({ item: answer.body as Record<string, unknown> });
      } catch (error) {
        return failure(error);
      }
    },
  );
}

function registerMoveTool(server: McpServer, request: FastifyRequest, deps: PipelineAddDeps) {
  server.registerTool(
    "move_pipeline_item",
    {
      title: "Move a pipeline item to another stage",
      description:
        "Move an item to a live stage (ids from list_pipeline). Send the item's version as last read: if someone changed it since, the move is refused (conflict) and you should list again. Free.",
      inputSchema: {
        item_id: z.string().min(1).max(64),
        ...pipelineItemMoveSchema.shape,
      },
      outputSchema: { item: z.record(z.string(), z.unknown()) },
    },
    async ({ item_id, stage_id, version }) => {
      try {
        const item = await call(deps, request, "POST", ownerTarget(movePipelineItem, { item_id }), {
          stage_id,
          version,
        });
        return result({ item });
      } catch (error) {
        return failure(error);
      }
    },
  );
}
