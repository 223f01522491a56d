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
