// The watchlist recipe: which freshly ingested parcels a watchlist picks, and how it scores them.
// The gateway validates request bodies with `recipeSchema` and the matcher validates what it
// stores with the same schema, so a recipe accepted at the edge is always one the matcher can run.
// The schema only validates; it never rewrites its input (no transforms), so it describes
// requests and responses alike in the OpenAPI document. The matcher canonicalizes a valid recipe
// (state names to codes, lists sorted and de-duplicated) before it stores or fingerprints it.
import { z } from "zod";
import { LEAD_SIGNALS, normalizeStateCode, RECIPE_USE_CLASSES } from "./catalogue.ts";

export {
  LEAD_SIGNAL_DESCRIPTIONS,
  LEAD_SIGNALS,
  type LeadSignal,
  normalizeStateCode,
  RECIPE_USE_CLASSES,
} from "./catalogue.ts";

// A list or a range bigger than anything sensible is a mistake or an attack on the matcher's
// per-parcel loop; the caps keep one evaluation cheap.
const MAX_LIST_ENTRIES = 500;
const MAX_DOLLARS = 1e12;

/**
 * Error messages for strict objects: an unknown field is named, a non-object says so. Every
 * object in a recipe rejects fields it does not know, so a typo never silently widens a recipe.
 */
export function unknownFieldError(issue: {
  code: string;
  keys?: readonly string[];
}): string | undefined {
  if (issue.code === "unrecognized_keys") {
    return `unknown field${issue.keys && issue.keys.length > 1 ? "s" : ""}: ${(issue.keys ?? []).join(", ")}`;
  }
  if (issue.code === "invalid_type") {
    return "must be an object";
  }
  return undefined;
}

function listOf<T extends z.ZodType>(item: T, what: string) {
  return z
    .array(item)
    .min(1, `must list at least one ${what} (leave the filter out to allow any)`)
    .max(MAX_LIST_ENTRIES, `must list at most ${MAX_LIST_ENTRIES} entries`);
}

interface RangeBounds {
  lowest: number;
  highest: number;
  integer?: boolean;
  /** Added to the "too big" message, e.g. why the bound exists. */
  highestHint?: string;
}

/** An inclusive `{min, max}` range; either end may be left out, not both. */
function rangeOf(bounds: RangeBounds) {
  let value = z
    .number({ error: "must be a number" })
    .min(bounds.lowest, `must be >= ${bounds.lowest}`)
    .max(
      bounds.highest,
      `must be <= ${bounds.highest}${bounds.highestHint ? ` (${bounds.highestHint})` : ""}`,
    );
  if (bounds.integer) {
    value = value.int("must be a whole number");
  }
  return z
    .strictObject({ min: value.optional(), max: value.optional() }, { error: unknownFieldError })
    .superRefine((range, ctx) => {
      if (range.min === undefined && range.max === undefined) {
        ctx.addIssue({ code: "custom", message: "needs min, max or both" });
      } else if (range.min !== undefined && range.max !== undefined && range.min > range.max) {
        ctx.addIssue({ code: "custom", path: ["min"], message: "must be <= max" });
      }
    });
}

const signalNameSchema = z.enum(LEAD_SIGNALS, {
  error: (issue) => `unknown signal ${JSON.stringify(issue.input)}`,
});

const stateSchema = z
  .string({ error: "must be a string" })
  .refine((state) => normalizeStateCode(state) !== null, {
    error: (issue) =>
      `unknown US state ${JSON.stringify(issue.input)}; use a USPS code such as "FL" or a full name such as "Florida"`,
  });

const mailingStatesSchema = z
  .strictObject(
    {
      include: listOf(stateSchema, "state").optional(),
      exclude: listOf(stateSchema, "state").optional(),
    },
    { error: unknownFieldError },
  )
  .superRefine((states, ctx) => {
    if (states.include === undefined && states.exclude === undefined) {
      ctx.addIssue({ code: "custom", message: "needs include, exclude or both" });
      return;
    }
    const included = new Set((states.include ?? []).map(normalizeStateCode));
    (states.exclude ?? []).forEach((state, index) => {
      const code = normalizeStateCode(state);
      if (code !== null && included.has(code)) {
        ctx.addIssue({
          code: "custom",
          path: ["exclude", index],
          message: `${code} is also in include`,
        });
      }
    });
  });

export const recipeFiltersSchema = z
  .strictObject(
    {
      counties: listOf(
        z
          .number({ error: "must be a DOR county number" })
          .int("must be a whole number")
          .min(11, "must be a DOR county number from 11 to 77")
          .max(77, "must be a DOR county number from 11 to 77"),
        "county",
      ).optional(),
      cities: listOf(
        z
          .string({ error: "must be a string" })
          .max(64, "must be at most 64 characters")
          .regex(/\S/, "must not be blank"),
        "city",
      ).optional(),
      zip_codes: listOf(
        z.string({ error: "must be a string" }).regex(/^\d{5}$/, "must be a 5-digit ZIP code"),
        "ZIP code",
      ).optional(),
      use_classes: listOf(
        z.enum(RECIPE_USE_CLASSES, {
          error: (issue) =>
            `unknown use class ${JSON.stringify(issue.input)}; one of ${RECIPE_USE_CLASSES.join(", ")}`,
        }),
        "use class",
      ).optional(),
      dor_use_codes: listOf(
        z
          .string({ error: "must be a string" })
          .regex(/^\d{3}$/, 'must be a 3-digit DOR land-use code such as "001"'),
        "land-use code",
      ).optional(),
      just_value: rangeOf({ lowest: 0, highest: MAX_DOLLARS }).optional(),
      est_equity: rangeOf({ lowest: -MAX_DOLLARS, highest: MAX_DOLLARS }).optional(),
      equity_ratio: rangeOf({
        lowest: -1_000,
        highest: 1,
        highestHint: "equity_ratio is a fraction: 0.5 means 50%",
      }).optional(),
      year_built: rangeOf({ lowest: 1600, highest: 2200, integer: true }).optional(),
      living_area_sqft: rangeOf({ lowest: 0, highest: 1e9 }).optional(),
      land_sqft: rangeOf({ lowest: 0, highest: 1e12 }).optional(),
      last_sale_age_years: rangeOf({ lowest: 0, highest: 500 }).optional(),
      last_qualified_sale_age_years: rangeOf({ lowest: 0, highest: 500 }).optional(),
      owner_mailing_states: mailingStatesSchema.optional(),
      homestead: z.boolean({ error: "must be true or false" }).optional(),
    },
    { error: unknownFieldError },
  )
  .meta({ id: "RecipeFilters" });

// Zod reports a key outside the signal catalogue as `unrecognized_keys`, which its types for
// record errors do not list; the loose parameter type accepts it.
function signalMapError(issue: { code: string; keys?: readonly string[] }): string | undefined {
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys ?? [];
    return `unknown signal${keys.length > 1 ? "s" : ""}: ${keys.join(", ")}`;
  }
  return issue.code === "invalid_type" ? "must be an object of signal names to weights" : undefined;
}

const weightSchema = z
  .number({ error: "must be a number" })
  .min(-1, "must be between -1 and 1")
  .max(1, "must be between -1 and 1")
  .refine((weight) => weight !== 0, "must not be 0 (leave the signal out instead)");

function signalListOf(what: string) {
  return z
    .array(signalNameSchema)
    .max(LEAD_SIGNALS.length, `must list at most ${LEAD_SIGNALS.length} ${what}`);
}

/** True when the (possibly invalid) value is an object with at least one own key. */
function hasKeys(value: unknown): boolean {
  return typeof value === "object" && value !== null && Object.keys(value).length > 0;
}

function hasEntries(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0;
}

export const recipeSchema = z
  .strictObject(
    {
      filters: recipeFiltersSchema.optional(),
      signals: z
        .partialRecord(signalNameSchema, weightSchema, {
          error: signalMapError,
        })
        .optional(),
      required_signals: signalListOf("required signals").optional(),
      excluded_signals: signalListOf("excluded signals").optional(),
      min_score: z
        .number({ error: "must be a number" })
        .min(0, "must be between 0 and 1")
        .max(1, "must be between 0 and 1")
        .optional(),
      allow_match_all: z.boolean({ error: "must be true or false" }).optional(),
    },
    { error: unknownFieldError },
  )
  // Cross-field rules. Zod runs this even when a field above failed, so it reads the value
  // defensively and reports only contradictions between fields that are themselves well formed.
  .superRefine((recipe, ctx) => {
    const weights: Record<string, unknown> = hasKeys(recipe.signals) ? { ...recipe.signals } : {};
    const required = Array.isArray(recipe.required_signals) ? recipe.required_signals : [];
    const excluded = new Set<string>(
      Array.isArray(recipe.excluded_signals) ? recipe.excluded_signals : [],
    );

    required.forEach((signal, index) => {
      if (excluded.has(signal)) {
        ctx.addIssue({
          code: "custom",
          path: ["required_signals", index],
          message: `${signal} is also in excluded_signals`,
        });
      }
      const weight = weights[signal];
      if (typeof weight === "number" && weight < 0) {
        ctx.addIssue({
          code: "custom",
          path: ["signals", signal],
          message: "a required signal must not have a negative weight",
        });
      }
    });
    for (const signal of Object.keys(weights)) {
      if (excluded.has(signal)) {
        ctx.addIssue({
          code: "custom",
          path: ["signals", signal],
          message: "is in excluded_signals, so its weight could never count",
        });
      }
    }

    const weightValues = Object.values(weights).filter(
      (weight): weight is number => typeof weight === "number",
    );
    const hasWeightedSignals = weightValues.length > 0;
    if (hasWeightedSignals && !weightValues.some((weight) => weight > 0)) {
      ctx.addIssue({
        code: "custom",
        path: ["signals"],
        message: "needs at least one positive weight",
      });
    }
    const minScore = typeof recipe.min_score === "number" ? recipe.min_score : 0;
    if (minScore > 0 && !hasWeightedSignals) {
      ctx.addIssue({
        code: "custom",
        path: ["min_score"],
        message: "has no effect without weighted signals (a recipe without signals scores 1)",
      });
    }

    const constrained =
      hasKeys(recipe.filters) ||
      hasEntries(recipe.required_signals) ||
      hasEntries(recipe.excluded_signals) ||
      (hasWeightedSignals && minScore > 0);
    if (!constrained && recipe.allow_match_all !== true) {
      ctx.addIssue({
        code: "custom",
        message:
          "matches every parcel: add a filter, a required or excluded signal, or signals with min_score above 0 (or set allow_match_all: true)",
      });
    }
  })
  .meta({
    id: "Recipe",
    description:
      "Filters on parcel fields plus weighted lead signals. A parcel matches when every filter passes, every required signal fired, no excluded signal fired, and its score reaches min_score.",
  });

export type Recipe = z.infer<typeof recipeSchema>;
export type RecipeFilters = z.infer<typeof recipeFiltersSchema>;
export type RecipeRange = NonNullable<RecipeFilters["just_value"]>;

/** One validation failure: the dotted path into the recipe (`recipe.filters.just_value.min`) and why. */
export interface RecipeIssue {
  path: string;
  message: string;
}

export type RecipeValidation = { ok: true; recipe: Recipe } | { ok: false; issues: RecipeIssue[] };

/** `["filters", "counties", 0]` under `recipe` -> `recipe.filters.counties[0]`. */
export function formatIssuePath(root: string, path: readonly PropertyKey[]): string {
  let formatted = root;
  for (const segment of path) {
    if (typeof segment === "number") {
      formatted += `[${segment}]`;
    } else {
      formatted += formatted === "" ? String(segment) : `.${String(segment)}`;
    }
  }
  return formatted;
}

/**
 * Zod issues as `{path, message}` pairs. An "unknown fields" issue is split into one issue per
 * field so that every path names the offending key itself.
 */
export function toRecipeIssues(error: z.ZodError, root = "recipe"): RecipeIssue[] {
  const issues: RecipeIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === "unrecognized_keys") {
      const isSignalMap = issue.path[issue.path.length - 1] === "signals";
      for (const key of issue.keys) {
        issues.push({
          path: formatIssuePath(root, [...issue.path, key]),
          message: isSignalMap ? `unknown signal ${JSON.stringify(key)}` : "unknown field",
        });
      }
    } else {
      issues.push({ path: formatIssuePath(root, issue.path), message: issue.message });
    }
  }
  return issues;
}

/**
 * Why a request body fails its schema, every failing path named from `body`
 * (`body.recipe.filters.counties[1]`), unknown fields one per key; undefined when it passes.
 */
export function bodyIssues(
  schema: z.ZodType,
  body: unknown,
): { message: string; fields: RecipeIssue[] } | undefined {
  const parsed = schema.safeParse(body);
  if (parsed.success) {
    return undefined;
  }
  const fields = toRecipeIssues(parsed.error, "body");
  return {
    message: `invalid body: ${fields.map((field) => `${field.path} ${field.message}`).join("; ")}`,
    fields,
  };
}

/** Validates an untrusted recipe; on failure every issue names its path. */
export function validateRecipe(input: unknown, root = "recipe"): RecipeValidation {
  const parsed = recipeSchema.safeParse(input);
  if (parsed.success) {
    return { ok: true, recipe: parsed.data };
  }
  return { ok: false, issues: toRecipeIssues(parsed.error, root) };
}
