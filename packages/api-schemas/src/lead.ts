import { z } from "zod";
import { LEAD_SIGNALS, RECIPE_USE_CLASSES } from "./catalogue.ts";

const sale = z
  .object({
    price: z.number().int().describe("Whole US dollars"),
    year: z.number().int(),
    month: z.number().int().min(1).max(12),
    qualification_code: z
      .string()
      .nullable()
      .describe("DOR QUAL_CD; 01 and 02 are arm's-length sales"),
  })
  .describe("A sale as the roll records it: year and month, never the day")
  .meta({ id: "Sale" });

/** The use classes a lead shows: the catalogue's one list, which recipes filter by too. */
export const USE_CLASSES = RECIPE_USE_CLASSES;

export const useClassSchema = z.enum(USE_CLASSES);

/**
 * A parcel as a lead: the county roll's facts, normalized, plus what the service derives from
 * them (signals with their reasons, the equity estimate). Keyed by folio.
 */
export const leadSchema = z
  .object({
    folio: z
      .string()
      .describe("Statewide lead id: two-digit DOR county number, a dash, the county PARCEL_ID"),
    county: z.object({
      number: z.number().int().min(11).max(77).describe("DOR county number (23 = Miami-Dade)"),
      name: z.string().nullable(),
    }),
    parcel_id: z.string().describe("The county's PARCEL_ID as on the roll"),
    roll_year: z.number().int(),
    roll_stage: z.enum(["preliminary", "final"]),
    address: z.object({
      line: z.string().nullable().describe("Situs street line; vacant land often has none"),
      city: z.string().nullable().describe("May be UNINCORPORATED"),
      zip: z.string().nullable(),
      formatted: z.string().describe("One-line situs address, as in webhook payloads"),
    }),
    owner: z.object({
      name: z.string(),
      mailing_address: z.object({
        line1: z.string().nullable(),
        line2: z.string().nullable(),
        city: z.string().nullable(),
        state: z.string().nullable().describe("As written on the roll"),
        zip: z.string().nullable(),
      }),
      mailing_state: z
        .string()
        .nullable()
        .describe("USPS code (FLORIDA and FL are both FL); null when blank or foreign"),
    }),
    valuation: z.object({
      just_value: z.number().int(),
      assessed_value: z.number().int().nullable(),
      taxable_value: z.number().int().nullable(),
      land_value: z.number().int().nullable(),
      est_equity: z
        .number()
        .int()
        .nullable()
        .describe("Estimate: just value minus the modelled balance of the last purchase loan"),
      equity_ratio: z.number().nullable().describe("Estimate: est_equity / just_value"),
    }),
    equity_estimate: z
      .object({
        is_estimate: z.literal(true),
        est_loan_balance: z.number().int(),
        basis_sale: sale,
        assumed_loan_to_value: z.number(),
        assumed_rate_pct: z.number(),
        assumed_term_years: z.number().int(),
        method: z.string(),
      })
      .nullable()
      .describe("How est_equity was modelled; null when the roll shows no usable purchase"),
    land_use: z.object({
      use_class: useClassSchema.nullable(),
      dor_use_code: z.string().nullable().describe("DOR_UC, three digits"),
      appraiser_use_code: z.string().nullable(),
    }),
    building: z.object({
      year_built: z.number().int().nullable(),
      living_area_sqft: z.number().int().nullable(),
    }),
    land_sqft: z.number().int().nullable(),
    sales: z.object({
      last_qualified_sale: sale.nullable(),
      last_sale: sale.nullable(),
    }),
    homestead: z.boolean(),
    signals_fired: z.array(z.string()),
    signals: z.array(z.object({ name: z.string(), reason: z.string() })),
    observed_at: z.string().describe("When this content was observed, RFC 3339 UTC"),
  })
  .meta({ id: "Lead" });

export type Lead = z.infer<typeof leadSchema>;

/** Body of a batch read: at most 100 folios. */
/** A folio or bare parcel id as a client may paste it: surrounding spaces are not part of it. */
export const folioInputSchema = z.string().trim().min(1).max(64);

export const leadLookupRequestSchema = z
  .strictObject({ folios: z.array(folioInputSchema).min(1).max(100) })
  .meta({ id: "LeadLookupRequest" });

export const leadLookupResponseSchema = z
  .object({
    leads: z.array(leadSchema),
    missing: z.array(z.string()).describe("Requested folios with no parcel"),
    ambiguous: z
      .array(z.object({ requested: z.string(), folios: z.array(z.string()) }))
      .describe(
        "Requested bare parcel ids that several counties have, with their folios: ask by one; nothing is charged for them",
      ),
  })
  .meta({ id: "LeadLookupResponse" });

const commaList = z.string().transform((value) =>
  value
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean),
);

/** Signal names a search filters on; a name outside the catalogue is a mistake, not "no match". */
const signalFilter = commaList.superRefine((names, context) => {
  const known: readonly string[] = LEAD_SIGNALS;
  const unknown = names.filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    context.addIssue({
      code: "custom",
      message: `names no known signal: ${unknown.join(", ")} (known: ${LEAD_SIGNALS.join(", ")})`,
    });
  }
});

/**
 * A whole number written in decimal digits in a query string: "0x10", "1e2" or " 5" are mistakes
 * to report, not numbers to guess at.
 */
export function queryInteger(min: number, max: number) {
  return z
    .string()
    .regex(/^-?\d{1,13}$/, "must be a whole number in decimal digits")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
}

/**
 * The bounds of the lead search's whole-number filters and page size, declared once for every
 * surface: REST reads them from a query string, MCP's `search_leads` from JSON arguments. Dollars:
 * values are never negative; equity is, when the estimated loan exceeds the value.
 */
export const LEAD_SEARCH_BOUNDS = {
  county: { min: 11, max: 77 },
  min_just_value: { min: 0, max: 1e12 },
  max_just_value: { min: 0, max: 1e12 },
  min_equity: { min: -1e12, max: 1e12 },
  max_equity: { min: -1e12, max: 1e12 },
  limit: { min: 1, max: 200 },
} as const;

type SearchInteger = keyof typeof LEAD_SEARCH_BOUNDS;

const SEARCH_DESCRIPTIONS: Partial<Record<SearchInteger | "signals" | "city", string>> = {
  county: "DOR county number, e.g. 23 for Miami-Dade",
  city: "Situs city, e.g. MIAMI",
  min_equity: "Estimated equity in whole dollars",
  limit: "Leads per page; each lead returned costs one lead-view",
};

/** A search's filters that read the same in a query string and in JSON. */
const searchText = {
  city: z.string().min(1).max(64),
  zip: z.string().regex(/^\d{5}$/, "must be a 5-digit ZIP"),
  use_class: useClassSchema,
  cursor: z.string().min(1).max(512).describe("Opaque; from next_cursor"),
};

/** A whole-number filter of the search, as a query string carries it. */
function queryBound(name: SearchInteger) {
  const { min, max } = LEAD_SEARCH_BOUNDS[name];
  const schema = queryInteger(min, max);
  const description = SEARCH_DESCRIPTIONS[name];
  return description === undefined ? schema : schema.describe(description);
}

/** The same filter as a JSON argument. */
function jsonBound(name: SearchInteger) {
  const { min, max } = LEAD_SEARCH_BOUNDS[name];
  const schema = z.number().int().min(min).max(max);
  const description = SEARCH_DESCRIPTIONS[name];
  return description === undefined ? schema : schema.describe(description);
}

/**
 * Search filters and paging of a lead list; every filter is optional, and an unknown parameter is
 * refused (a misspelt filter would otherwise widen a paid search without a word).
 */
export const leadSearchQuerySchema = z.strictObject({
  county: queryBound("county").optional(),
  city: searchText.city.optional(),
  zip: searchText.zip.optional(),
  use_class: searchText.use_class.optional(),
  signals: signalFilter
    .optional()
    .describe("Comma-separated signal names; a lead must have all of them"),
  min_just_value: queryBound("min_just_value").optional(),
  max_just_value: queryBound("max_just_value").optional(),
  min_equity: queryBound("min_equity").optional(),
  max_equity: queryBound("max_equity").optional(),
  limit: queryBound("limit").default(50),
  cursor: searchText.cursor.optional(),
});
// No component id: OpenAPI has no shared query-parameter objects, so each route inlines these.

/**
 * The default page of MCP's `search_leads`: an assistant that names no limit spends at most ten
 * lead-views a call. The one place it differs from REST; its bounds are the same.
 */
export const MCP_SEARCH_DEFAULT_LIMIT = 10;

/**
 * The same search as JSON arguments (MCP's `search_leads`): the same names, bounds and signal
 * catalogue as `leadSearchQuerySchema`, numbers as numbers and the signals as a list. A call with
 * these arguments is sent on as that query string, so the two cannot accept different searches.
 */
export const leadSearchArgumentsSchema = z.strictObject({
  county: jsonBound("county").optional(),
  city: searchText.city.optional(),
  zip: searchText.zip.optional(),
  use_class: searchText.use_class.optional(),
  signals: z
    .array(z.enum(LEAD_SIGNALS))
    .optional()
    .describe("Signal names a lead must all have fired, e.g. absentee_owner"),
  min_just_value: jsonBound("min_just_value").optional(),
  max_just_value: jsonBound("max_just_value").optional(),
  min_equity: jsonBound("min_equity").optional(),
  max_equity: jsonBound("max_equity").optional(),
  limit: jsonBound("limit").default(MCP_SEARCH_DEFAULT_LIMIT),
  cursor: searchText.cursor.optional().describe("next_cursor of the previous call"),
});

/** The query string of a search given as JSON arguments: what REST reads. */
export function searchQueryOf(args: Record<string, unknown>): URLSearchParams {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(args)) {
    if (value !== undefined) {
      params.set(name, Array.isArray(value) ? value.join(",") : String(value));
    }
  }
  return params;
}

export type LeadSearchQuery = z.infer<typeof leadSearchQuerySchema>;

export const leadPageSchema = z
  .object({
    leads: z.array(leadSchema),
    next_cursor: z
      .string()
      .nullable()
      .describe("Pass as cursor for the next page; null at the end"),
  })
  .meta({ id: "LeadPage" });
