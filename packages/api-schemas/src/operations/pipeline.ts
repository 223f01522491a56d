import { z } from "zod";
import {
  pipelineBatchAddResultSchema,
  pipelineBatchAddSchema,
  pipelineFilterShape,
  pipelineHistoryQuerySchema,
  pipelineHistorySchema,
  pipelineItemAddSchema,
  pipelineItemMoveSchema,
  pipelineItemPageSchema,
  pipelineItemSchema,
  pipelineItemSummarySchema,
  pipelineItemUpdateSchema,
  pipelineListQuerySchema,
  pipelineRemoveQuerySchema,
  pipelineStageCreateSchema,
  pipelineStageListSchema,
  pipelineStageSchema,
  pipelineStageUpdateSchema,
} from "../pipeline.ts";
import { defineOperation } from "./operation.ts";

// The pipeline, owned by the pipeline service. Adding a parcel is a lead read the gateway
// charges (one lead-view unless the folio was viewed that UTC day); every other operation is
// free and keeps working when the quota is exhausted. Every tier opens it (decision 0370).

const pipeline = { owner: "pipeline", tags: ["pipeline"], surface: "rest" } as const;
const edgeErrors = ["unauthorized", "rate_limited", "unavailable"] as const;
const stageParams = z.object({ stage_id: z.string().min(1).max(64) });
const itemParams = z.object({ item_id: z.string().min(1).max(64) });

export const listPipelineStages = defineOperation({
  ...pipeline,
  operationId: "listPipelineStages",
  method: "GET",
  path: "/v1/pipeline/stages",
  internalPath: "/internal/v1/pipeline/stages",
  summary:
    "The tenant's stages in board order, retired ones included; a new tenant starts with New, Contacted, Follow-up, Offer made, Under contract, Closed won and Closed lost",
  responses: { 200: pipelineStageListSchema },
  errors: edgeErrors,
});

export const createPipelineStage = defineOperation({
  ...pipeline,
  operationId: "createPipelineStage",
  method: "POST",
  path: "/v1/pipeline/stages",
  internalPath: "/internal/v1/pipeline/stages",
  summary: "Add a stage (admins)",
  body: pipelineStageCreateSchema,
  responses: { 201: pipelineStageSchema },
  errors: [...edgeErrors, "forbidden", "conflict"],
});

export const updatePipelineStage = defineOperation({
  ...pipeline,
  operationId: "updatePipelineStage",
  method: "PATCH",
  path: "/v1/pipeline/stages/:stage_id",
  internalPath: "/internal/v1/pipeline/stages/:stage_id",
  summary:
    "Rename, reorder, retire or bring back a stage (admins); a retired stage takes no new items and keeps its items readable",
  params: stageParams,
  body: pipelineStageUpdateSchema,
  responses: { 200: pipelineStageSchema },
  errors: [...edgeErrors, "forbidden", "not_found", "conflict"],
});

export const listPipelineItems = defineOperation({
  ...pipeline,
  operationId: "listPipelineItems",
  method: "GET",
  path: "/v1/pipeline/items",
  internalPath: "/internal/v1/pipeline/items",
  summary:
    "The pipeline's items with the lead as stored when added; filter by stage, assignee, tag, follow-up due or text, sort, opaque cursor. Free",
  querystring: pipelineListQuerySchema,
  responses: { 200: pipelineItemPageSchema },
  errors: edgeErrors,
});

export const addPipelineItem = defineOperation({
  ...pipeline,
  operationId: "addPipelineItem",
  method: "POST",
  path: "/v1/pipeline/items",
  // The gateway reads the lead and sends it along as the snapshot.
  internalPath: "/internal/v1/pipeline/items",
  summary:
    "Add a parcel to the pipeline: a lead read, one lead-view unless the folio was viewed this UTC day (402 when the quota is exhausted); a folio is in the pipeline at most once (409)",
  body: pipelineItemAddSchema,
  responses: { 201: pipelineItemSchema },
  errors: [...edgeErrors, "quota_exceeded", "not_found", "conflict"],
});

export const addPipelineItemsBatch = defineOperation({
  ...pipeline,
  operationId: "addPipelineItemsBatch",
  method: "POST",
  path: "/v1/pipeline/items/batch",
  internalPath: "/internal/v1/pipeline/items/batch",
  summary:
    "Add up to 100 parcels at once, priced like POST /v1/leads/batch: one lead-view per folio added that was not viewed this UTC day, all or nothing against the quota; folios already in the pipeline or with no parcel are listed and free",
  body: pipelineBatchAddSchema,
  responses: { 200: pipelineBatchAddResultSchema },
  errors: [...edgeErrors, "quota_exceeded", "not_found", "conflict"],
});

export const getPipelineItem = defineOperation({
  ...pipeline,
  operationId: "getPipelineItem",
  method: "GET",
  path: "/v1/pipeline/items/:item_id",
  internalPath: "/internal/v1/pipeline/items/:item_id",
  summary: "One item with its notes and the lead as read when added. Free",
  params: itemParams,
  responses: { 200: pipelineItemSchema },
  errors: [...edgeErrors, "not_found"],
});

export const updatePipelineItem = defineOperation({
  ...pipeline,
  operationId: "updatePipelineItem",
  method: "PATCH",
  path: "/v1/pipeline/items/:item_id",
  internalPath: "/internal/v1/pipeline/items/:item_id",
  summary:
    "Assign, tag, set the follow-up or append a note, at the version last read (409 when it changed since). Free",
  params: itemParams,
  body: pipelineItemUpdateSchema,
  responses: { 200: pipelineItemSchema },
  errors: [...edgeErrors, "not_found", "conflict"],
});

export const movePipelineItem = defineOperation({
  ...pipeline,
  operationId: "movePipelineItem",
  method: "POST",
  path: "/v1/pipeline/items/:item_id/move",
  internalPath: "/internal/v1/pipeline/items/:item_id/move",
  summary:
    "Move an item to another live stage, at the version last read (409 when it changed since). Free",
  params: itemParams,
  body: pipelineItemMoveSchema,
  // A card's fields, as the board lists them: no notes, no snapshot.
  responses: { 200: pipelineItemSummarySchema },
  errors: [...edgeErrors, "not_found", "conflict"],
});

export const removePipelineItem = defineOperation({
  ...pipeline,
  operationId: "removePipelineItem",
  method: "DELETE",
  path: "/v1/pipeline/items/:item_id",
  internalPath: "/internal/v1/pipeline/items/:item_id",
  summary: "Take an item off the pipeline, at the version last read (409 when it changed since)",
  params: itemParams,
  querystring: pipelineRemoveQuerySchema,
  responses: { 204: z.null().describe("No content") },
  errors: [...edgeErrors, "not_found", "conflict"],
});

export const getPipelineItemHistory = defineOperation({
  ...pipeline,
  operationId: "getPipelineItemHistory",
  method: "GET",
  path: "/v1/pipeline/items/:item_id/history",
  internalPath: "/internal/v1/pipeline/items/:item_id/history",
  summary:
    "Every change of an item, oldest first: who, what, when (the item's event stream, as published on pipeline.item-changed). Free",
  params: itemParams,
  querystring: pipelineHistoryQuerySchema,
  responses: { 200: pipelineHistorySchema },
  errors: [...edgeErrors, "not_found"],
});

export const exportPipelineCsv = defineOperation({
  operationId: "exportPipelineCsv",
  method: "GET",
  path: "/v1/pipeline/export.csv",
  // Paged through the listing, sorted by when the items were added.
  internalPath: "/internal/v1/pipeline/items",
  owner: "pipeline",
  tags: ["pipeline"],
  surface: "csv",
  summary:
    "The pipeline as CSV (text/csv, RFC 4180, streamed): folio, address, owner, stage, assignee, tags, follow-up, notes count and the stored lead's values. Free: no lead-views",
  querystring: z.strictObject(pipelineFilterShape),
  responses: { 200: z.unknown().describe("text/csv; header row, then one row per item") },
  errors: ["unauthorized", "tier_required", "rate_limited", "unavailable"],
});

/** The pipeline operations, in the order the gateway registers them. */
export const pipelineOperations = [
  listPipelineStages,
  createPipelineStage,
  updatePipelineStage,
  listPipelineItems,
  addPipelineItem,
  addPipelineItemsBatch,
  getPipelineItem,
  updatePipelineItem,
  movePipelineItem,
  removePipelineItem,
  getPipelineItemHistory,
  exportPipelineCsv,
] as const;
