import { z } from "zod";
import { folioInputSchema, leadSchema } from "./lead.ts";

// The pipeline: the tenant's stages and the parcels it works through them. Adding a parcel is a
// lead read (its lead is kept as read then, the snapshot); everything after is free.

/** Most stages a tenant keeps, retired ones included. */
export const PIPELINE_MAX_STAGES = 30;
/** Most tags on one item, and the longest tag. */
export const PIPELINE_MAX_TAGS = 20;
export const PIPELINE_TAG_MAX_LENGTH = 40;
/** The longest note. */
export const PIPELINE_NOTE_MAX_LENGTH = 4000;
/** Most folios one bulk add takes, as many as a batch read. */
export const PIPELINE_BATCH_MAX = 100;

const instantSchema = z.iso.datetime({ error: "must be an RFC 3339 UTC timestamp" });
/** A calendar day, YYYY-MM-DD, that exists. */
export const pipelineDaySchema = z.iso.date({ error: "must be a calendar day, YYYY-MM-DD" });
const idSchema = z.string().min(1).max(64);
const stageNameSchema = z
  .string()
  .trim()
  .min(1, "must not be blank")
  .max(60)
  .refine((name) => !/\p{Cc}/u.test(name), "must not hold control characters");
const tagSchema = z
  .string()
  .trim()
  .toLowerCase()
  .min(1, "must not be blank")
  .max(PIPELINE_TAG_MAX_LENGTH)
  .regex(/^[\p{L}\p{N}][\p{L}\p{N} _.:/-]*$/u, "letters, digits, space, _ . : / - only");
/** A tag given twice is kept once (by the pipeline, as the set it is). */
const tagsSchema = z.array(tagSchema).max(PIPELINE_MAX_TAGS);
const noteSchema = z
  .string()
  .trim()
  .min(1, "must not be blank")
  .max(PIPELINE_NOTE_MAX_LENGTH)
  .refine((text) => !text.includes("\u0000"), "must not hold NUL");
/** The version the client read: a write to an item that changed since answers 409. */
const versionSchema = z
  .number()
  .int()
  .min(1)
  .describe("The item's version as last read; a stale one is refused with 409 conflict");

export const pipelineStageSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    position: z.number().int().describe("Order on the board, from 0"),
    retired: z.boolean().describe("Retired: takes no new items; its items stay readable"),
    created_at: instantSchema,
  })
  .meta({ id: "PipelineStage" });

export const pipelineStageListSchema = z
  .object({ data: z.array(pipelineStageSchema) })
  .meta({ id: "PipelineStageList" });

export const pipelineStageCreateSchema = z
  .strictObject({
    name: stageNameSchema,
    position: z.number().int().min(0).optional().describe("Where it goes; last when not given"),
  })
  .meta({ id: "PipelineStageCreate" });

export const pipelineStageUpdateSchema = z
  .strictObject({
    name: stageNameSchema.optional(),
    position: z.number().int().min(0).optional().describe("Move the stage to this place"),
    retired: z.boolean().optional().describe("Retire the stage, or bring it back"),
  })
  .refine(
    (update) =>
      update.name !== undefined || update.position !== undefined || update.retired !== undefined,
    { message: "name, position or retired is required" },
  )
  .meta({ id: "PipelineStageUpdate" });

/** What the list and the board show of an item's lead: taken from the snapshot. */
export const pipelineLeadSummarySchema = z
  .object({
    address: z.string(),
    city: z.string().nullable(),
    owner_name: z.string(),
    just_value: z.number().int(),
    est_equity: z.number().int().nullable(),
    use_class: z.string().nullable(),
    signals_fired: z.array(z.string()),
  })
  .meta({ id: "PipelineLeadSummary" });

const itemFields = {
  id: z.string(),
  folio: z.string(),
  stage_id: z.string(),
  assignee_id: z.string().nullable().describe("The member working it"),
  tags: z.array(z.string()),
  follow_up_on: pipelineDaySchema.nullable().describe("The next follow-up, a UTC day"),
  notes_count: z.number().int(),
  version: z.number().int().describe("Send it back with a change: a stale one answers 409"),
  added_by: z.string().describe("The member who added it"),
  added_at: instantSchema,
  updated_at: instantSchema,
  lead: pipelineLeadSummarySchema.describe("The lead as read when added"),
};

export const pipelineItemSummarySchema = z.object(itemFields).meta({ id: "PipelineItemSummary" });

export const pipelineNoteSchema = z
  .object({
    id: z.string(),
    text: z.string(),
    author_id: z.string(),
    created_at: instantSchema,
  })
  .meta({ id: "PipelineNote" });

export const pipelineItemSchema = z
  .object({
    ...itemFields,
    notes: z.array(pipelineNoteSchema).describe("Oldest first"),
    snapshot: leadSchema.describe("The whole lead as the tenant read it when adding the parcel"),
  })
  .meta({ id: "PipelineItem" });

export const pipelineItemPageSchema = z
  .object({
    data: z.array(pipelineItemSummarySchema),
    next_cursor: z.string().nullable(),
  })
  .meta({ id: "PipelineItemPage" });

export const PIPELINE_EVENT_TYPES = [
  "added",
  "moved",
  "assigned",
  "tagged",
  "follow_up_set",
  "noted",
  "removed",
  "other",
] as const;

export const pipelineEventSchema = z
  .object({
    id: z.string(),
    item_id: z.string(),
    version: z.number().int().describe("The item's version this change made"),
    type: z.enum(PIPELINE_EVENT_TYPES),
    member_id: z.string().describe("Who made it"),
    occurred_at: instantSchema,
    stage_id: z.string().nullable(),
    from_stage_id: z.string().nullable(),
    assignee_id: z.string().nullable(),
    tags: z.array(z.string()).nullable(),
    follow_up_on: z.string().nullable(),
    note: z.object({ id: z.string(), text: z.string() }).nullable(),
  })
  .meta({ id: "PipelineEvent" });

export const pipelineHistorySchema = z
  .object({ data: z.array(pipelineEventSchema), next_cursor: z.string().nullable() })
  .meta({ id: "PipelineHistory" });

const addFields = {
  stage_id: idSchema.optional().describe("The stage it starts in; the first live stage if not"),
  assignee_id: idSchema.nullable().optional(),
  tags: tagsSchema.optional(),
  follow_up_on: pipelineDaySchema.nullable().optional(),
};

export const pipelineItemAddSchema = z
  .strictObject({
    folio: folioInputSchema,
    ...addFields,
    note: noteSchema.optional().describe("A first note"),
  })
  .meta({ id: "PipelineItemAdd" });

export const pipelineBatchAddSchema = z
  .strictObject({
    folios: z.array(folioInputSchema).min(1).max(PIPELINE_BATCH_MAX),
    ...addFields,
  })
  .meta({ id: "PipelineBatchAdd" });

export const pipelineBatchAddResultSchema = z
  .object({
    added: z.array(pipelineItemSummarySchema),
    already_in_pipeline: z.array(z.string()).describe("Folios the pipeline already holds: free"),
    missing: z.array(z.string()).describe("Folios with no parcel: free"),
  })
  .meta({ id: "PipelineBatchAddResult" });

export const pipelineItemUpdateSchema = z
  .strictObject({
    version: versionSchema,
    assignee_id: idSchema.nullable().optional().describe("A member of the tenant, or null"),
    tags: tagsSchema.optional().describe("The whole new set of tags"),
    follow_up_on: pipelineDaySchema.nullable().optional(),
    note: noteSchema.optional().describe("A note to append"),
  })
  .refine(
    (update) =>
      update.assignee_id !== undefined ||
      update.tags !== undefined ||
      update.follow_up_on !== undefined ||
      update.note !== undefined,
    { message: "assignee_id, tags, follow_up_on or note is required" },
  )
  .meta({ id: "PipelineItemUpdate" });

export const pipelineItemMoveSchema = z
  .strictObject({ stage_id: idSchema, version: versionSchema })
  .meta({ id: "PipelineItemMove" });

export const PIPELINE_SORTS = [
  "-updated_at",
  "updated_at",
  "-added_at",
  "added_at",
  "follow_up_on",
  "-follow_up_on",
] as const;

/** Filters shared by the listing and the CSV export. */
export const pipelineFilterShape = {
  stage_id: idSchema.optional(),
  assignee_id: idSchema.optional().describe("A member id, or `none` for unassigned items"),
  tag: tagSchema.optional(),
  follow_up_due: pipelineDaySchema
    .optional()
    .describe("Items whose follow-up falls on or before this UTC day (today: what is due)"),
  folio: folioInputSchema.optional(),
  q: z
    .string()
    .trim()
    .min(2)
    .max(64)
    .optional()
    .describe("Text in the folio, the address or the owner's name of the snapshot"),
};

// A query string cannot be a shared component in OpenAPI: no `meta` id here.
export const pipelineListQuerySchema = z.strictObject({
  ...pipelineFilterShape,
  sort: z.enum(PIPELINE_SORTS).default("-updated_at"),
  cursor: z.string().min(1).max(256).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

export const pipelineHistoryQuerySchema = z.strictObject({
  cursor: z.string().min(1).max(256).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(100),
});

export const pipelineRemoveQuerySchema = z.strictObject({
  version: z.coerce
    .number()
    .int()
    .min(1)
    .describe("The item's version as last read; a stale one is refused with 409 conflict"),
});

export type PipelineStage = z.infer<typeof pipelineStageSchema>;
export type PipelineItem = z.infer<typeof pipelineItemSchema>;
export type PipelineItemSummary = z.infer<typeof pipelineItemSummarySchema>;
export type PipelineEvent = z.infer<typeof pipelineEventSchema>;
export type PipelineListQuery = z.infer<typeof pipelineListQuerySchema>;
export type PipelineItemUpdate = z.infer<typeof pipelineItemUpdateSchema>;
export type PipelineLeadSummary = z.infer<typeof pipelineLeadSummarySchema>;

// The owner's internal bodies: the gateway reads the leads (a lead read, charged) and sends them
// along as the snapshots; and asks first which folios the pipeline holds, so a folio already
// there costs nothing.

/** The internal add: the public body and the lead as the gateway read it. */
export const pipelineItemAddInternalSchema = pipelineItemAddSchema.extend({ lead: leadSchema });

/** The internal bulk add: the public fields and the leads read for the folios not yet held. */
export const pipelineBatchAddInternalSchema = pipelineBatchAddSchema
  .omit({ folios: true })
  .extend({ leads: z.array(leadSchema).min(1).max(PIPELINE_BATCH_MAX) });

export const PIPELINE_PRESENT_PATH = "/internal/v1/pipeline/folios/present";

export const pipelinePresentRequestSchema = z.strictObject({
  folios: z.array(z.string().min(1).max(64)).min(1).max(PIPELINE_BATCH_MAX),
});

export const pipelinePresentResponseSchema = z.object({
  present: z.array(z.object({ folio: z.string(), id: z.string() })),
});
