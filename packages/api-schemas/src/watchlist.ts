// The watchlist resource: a named recipe owned by a tenant. Request bodies are strict (an unknown
// field is a client mistake worth a 400); the response record is open so later additive fields
// never break a serializer.
import { z } from "zod";
import { recipeSchema, unknownFieldError } from "./recipe.ts";

export const WATCHLIST_NAME_MAX_LENGTH = 120;

const instantSchema = z.iso.datetime({ error: "must be an RFC 3339 UTC timestamp" });

export const watchlistNameSchema = z
  .string({ error: "must be a string" })
  .min(1, "must not be empty")
  .max(WATCHLIST_NAME_MAX_LENGTH, `must be at most ${WATCHLIST_NAME_MAX_LENGTH} characters`)
  .regex(/\S/, "must not be blank")
  // Names end up in webhook payloads, CSV files and log lines; control characters only hurt there.
  .refine((name) => !/\p{Cc}/u.test(name), "must not contain control characters");

/** Body of the create request. */
export const watchlistCreateSchema = z
  .strictObject({ name: watchlistNameSchema, recipe: recipeSchema }, { error: unknownFieldError })
  .meta({ id: "WatchlistCreate" });

/**
 * Body of the update request: either field or both. A recipe that differs from the current one
 * becomes a new recipe version in force for parcels observed from then on; renaming alone does
 * not.
 */
export const watchlistUpdateSchema = z
  .strictObject(
    { name: watchlistNameSchema.optional(), recipe: recipeSchema.optional() },
    { error: unknownFieldError },
  )
  .refine((update) => update.name !== undefined || update.recipe !== undefined, {
    message: "needs name, recipe or both",
  })
  .meta({ id: "WatchlistUpdate" });

/** The watchlist as the API returns it. */
export const watchlistSchema = z
  .object({
    id: z.string().min(1),
    name: watchlistNameSchema,
    /** The recipe in force, in the canonical form the matcher stores. */
    recipe: recipeSchema,
    recipe_version: z.number().int().min(1),
    /** Hex SHA-256 of the canonical recipe; equal fingerprints mean equal recipes. */
    recipe_fingerprint: z.string().regex(/^[0-9a-f]{64}$/),
    /** Parcels observed at or after this instant are matched with this recipe version. */
    recipe_effective_from: instantSchema,
    created_at: instantSchema,
    updated_at: instantSchema,
    last_match_at: instantSchema.nullable(),
    match_count: z.number().int().min(0),
  })
  .meta({ id: "Watchlist" });

/** A page of watchlists; `next_cursor` is opaque and null on the last page. */
export const watchlistListSchema = z
  .object({ data: z.array(watchlistSchema), next_cursor: z.string().nullable() })
  .meta({ id: "WatchlistList" });

export type WatchlistCreate = z.infer<typeof watchlistCreateSchema>;
export type WatchlistUpdate = z.infer<typeof watchlistUpdateSchema>;
export type Watchlist = z.infer<typeof watchlistSchema>;
export type WatchlistList = z.infer<typeof watchlistListSchema>;

/** A manual run of a watchlist's current recipe over the most recent parcels of the store. */
export const manualRunSchema = z
  .object({
    id: z.string().min(1),
    watchlist_id: z.string().min(1),
    recipe_version: z.number().int().min(1),
    status: z.enum(["queued", "running", "succeeded", "failed"]),
    /** At most this many parcels are evaluated, most recently observed first. */
    parcel_limit: z.number().int().min(1),
    /** Parcels the run will evaluate; null until it has counted them. */
    parcels_total: z.number().int().min(0).nullable(),
    parcels_scanned: z.number().int().min(0),
    matches_found: z.number().int().min(0),
    error: z.string().nullable(),
    created_at: instantSchema,
    started_at: instantSchema.nullable(),
    finished_at: instantSchema.nullable(),
  })
  .meta({ id: "ManualRun" });

/** One match as the free polling call returns it: no parcel details, no lead-view. */
export const matchSummarySchema = z
  .object({
    match_id: z.string(),
    folio: z.string(),
    score: z.number().min(0).max(1),
    signals_fired: z.array(z.string()),
    observed_at: instantSchema,
    recipe_version: z.number().int().min(1),
    trigger: z.enum(["ingest", "manual_run"]),
    matched_at: instantSchema,
  })
  .meta({ id: "MatchSummary" });

/**
 * A page of a watchlist's matches, oldest first. `next_cursor` is always set: pass it back to get
 * the matches found since; `has_more` says whether more are already waiting.
 */
export const matchSummaryPageSchema = z
  .object({
    matches: z.array(matchSummarySchema),
    next_cursor: z.string(),
    has_more: z.boolean(),
  })
  .meta({ id: "MatchSummaryPage" });

/** Paging of a watchlist's matches: `limit` per page (100 at most), from after `cursor`. */
export const matchPageQuerySchema = z.object({
  cursor: z
    .string()
    .min(1)
    .max(128)
    .optional()
    .describe(
      "Opaque; from next_cursor. Matches are kept 90 days: a cursor from before the matches kept answers 410 cursor_expired",
    ),
  limit: z.coerce.number().int().min(1).max(100).default(50),
});

export type ManualRun = z.infer<typeof manualRunSchema>;
export type MatchSummary = z.infer<typeof matchSummarySchema>;
export type MatchSummaryPage = z.infer<typeof matchSummaryPageSchema>;
