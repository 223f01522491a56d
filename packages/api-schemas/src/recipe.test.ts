import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  bodyIssues,
  formatIssuePath,
  LEAD_SIGNAL_DESCRIPTIONS,
  LEAD_SIGNALS,
  normalizeStateCode,
  type RecipeIssue,
  recipeSchema,
  validateRecipe,
} from "./recipe.ts";

/** The issues of an invalid recipe; fails the test if it was accepted. */
function issuesOf(input: unknown): RecipeIssue[] {
  const result = validateRecipe(input);
  if (result.ok) {
    throw new Error(`expected ${JSON.stringify(input)} to be rejected`);
  }
  return result.issues;
}

const MATCH_ALL_MESSAGE =
  "matches every parcel: add a filter, a required or excluded signal, or signals with min_score above 0 (or set allow_match_all: true)";

describe("valid recipes", () => {
  it("accepts a recipe using every field", () => {
    const recipe = {
      filters: {
        counties: [23, 16],
        cities: ["Miami", "HIALEAH"],
        zip_codes: ["33125"],
        use_classes: ["residential"],
        dor_use_codes: ["001", "004"],
        just_value: { min: 100_000, max: 800_000 },
        est_equity: { min: -50_000 },
        equity_ratio: { min: 0.5, max: 1 },
        year_built: { max: 1990 },
        living_area_sqft: { min: 800 },
        land_sqft: { max: 20_000 },
        last_sale_age_years: { min: 10 },
        last_qualified_sale_age_years: { min: 10, max: 40 },
        owner_mailing_states: { include: ["FL", "Georgia"], exclude: ["TX"] },
        homestead: false,
      },
      signals: { absentee_owner: 0.4, high_equity: 0.6, corporate_owner: -0.2 },
      required_signals: ["absentee_owner"],
      excluded_signals: ["estate_owner"],
      min_score: 0.5,
      allow_match_all: false,
    };
    expect(validateRecipe(recipe)).toEqual({ ok: true, recipe });
  });

  it("accepts a filter-only recipe and a signals-only recipe with a threshold", () => {
    expect(validateRecipe({ filters: { counties: [23] } }).ok).toBe(true);
    expect(validateRecipe({ signals: { vacant_land: 1 }, min_score: 0.1 }).ok).toBe(true);
  });

  it("accepts inclusive equal bounds (min == max)", () => {
    expect(validateRecipe({ filters: { year_built: { min: 1950, max: 1950 } } }).ok).toBe(true);
  });

  it("accepts weights at the ends of the range", () => {
    const recipe = { signals: { vacant_land: 1, corporate_owner: -1 }, min_score: 0.5 };
    expect(validateRecipe(recipe).ok).toBe(true);
  });
});

describe("empty recipes", () => {
  it("rejects an empty recipe that would match every parcel", () => {
    expect(issuesOf({})).toEqual([{ path: "recipe", message: MATCH_ALL_MESSAGE }]);
  });

  it("rejects signals without a min_score: every parcel scores at least 0", () => {
    expect(issuesOf({ signals: { absentee_owner: 0.5 } })).toEqual([
      { path: "recipe", message: MATCH_ALL_MESSAGE },
    ]);
    expect(issuesOf({ signals: { absentee_owner: 0.5 }, min_score: 0 })).toEqual([
      { path: "recipe", message: MATCH_ALL_MESSAGE },
    ]);
  });

  it("rejects empty filters object as no constraint", () => {
    expect(issuesOf({ filters: {} })).toEqual([{ path: "recipe", message: MATCH_ALL_MESSAGE }]);
  });

  it("accepts a match-all recipe only when explicitly allowed", () => {
    expect(validateRecipe({ allow_match_all: true }).ok).toBe(true);
    expect(validateRecipe({ allow_match_all: true, signals: { high_equity: 1 } }).ok).toBe(true);
    expect(issuesOf({ allow_match_all: false })).toEqual([
      { path: "recipe", message: MATCH_ALL_MESSAGE },
    ]);
  });

  it("counts required and excluded signals as constraints", () => {
    expect(validateRecipe({ required_signals: ["vacant_land"] }).ok).toBe(true);
    expect(validateRecipe({ excluded_signals: ["corporate_owner"] }).ok).toBe(true);
  });
});

describe("unknown fields", () => {
  it("names each unknown field at every level", () => {
    expect(
      issuesOf({
        filters: { counties: [23], county: 23, just_value: { min: 1, maximum: 5 } },
        min_scroe: 0.5,
      }),
    ).toEqual([
      { path: "recipe.filters.just_value.maximum", message: "unknown field" },
      { path: "recipe.filters.county", message: "unknown field" },
      { path: "recipe.min_scroe", message: "unknown field" },
    ]);
  });

  it("names unknown fields of owner_mailing_states", () => {
    expect(issuesOf({ filters: { owner_mailing_states: { only: ["FL"] } } })).toEqual([
      { path: "recipe.filters.owner_mailing_states.only", message: "unknown field" },
      { path: "recipe.filters.owner_mailing_states", message: "needs include, exclude or both" },
    ]);
  });

  it("says so when a recipe or a filter is not an object", () => {
    expect(issuesOf("absentee")).toEqual([{ path: "recipe", message: "must be an object" }]);
    expect(issuesOf({ filters: [] })).toEqual([
      { path: "recipe.filters", message: "must be an object" },
    ]);
    expect(issuesOf({ filters: { just_value: 100_000 } })).toEqual([
      { path: "recipe.filters.just_value", message: "must be an object" },
    ]);
  });
});

describe("signals", () => {
  it("rejects signal names outside the catalogue, in weights and in lists", () => {
    expect(
      issuesOf({
        signals: { absentee: 0.5, high_equity: 0.5 },
        required_signals: ["high_equity", "probate"],
        excluded_signals: ["lis_pendens"],
        min_score: 0.5,
      }),
    ).toEqual([
      { path: "recipe.signals.absentee", message: 'unknown signal "absentee"' },
      { path: "recipe.required_signals[1]", message: 'unknown signal "probate"' },
      { path: "recipe.excluded_signals[0]", message: 'unknown signal "lis_pendens"' },
    ]);
  });

  it("rejects weights outside [-1, 1] and a weight of 0", () => {
    expect(
      issuesOf({
        signals: { absentee_owner: 1.5, high_equity: -2, vacant_land: 0, recent_sale: 0.5 },
        min_score: 0.5,
      }),
    ).toEqual([
      { path: "recipe.signals.absentee_owner", message: "must be between -1 and 1" },
      { path: "recipe.signals.high_equity", message: "must be between -1 and 1" },
      {
        path: "recipe.signals.vacant_land",
        message: "must not be 0 (leave the signal out instead)",
      },
    ]);
  });

  it("rejects a weight that is not a number", () => {
    expect(issuesOf({ signals: { absentee_owner: "high" }, min_score: 0.5 })).toEqual([
      { path: "recipe.signals.absentee_owner", message: "must be a number" },
    ]);
  });

  it("rejects signals given as a list instead of a weight map", () => {
    expect(issuesOf({ signals: ["absentee_owner"], min_score: 0.5 })).toEqual([
      { path: "recipe.signals", message: "must be an object of signal names to weights" },
    ]);
  });

  it("needs at least one positive weight", () => {
    expect(
      issuesOf({ filters: { counties: [23] }, signals: { corporate_owner: -0.5 }, min_score: 0.2 }),
    ).toEqual([{ path: "recipe.signals", message: "needs at least one positive weight" }]);
  });

  it("rejects a signal both required and excluded", () => {
    expect(
      issuesOf({
        required_signals: ["vacant_land", "absentee_owner"],
        excluded_signals: ["absentee_owner"],
      }),
    ).toEqual([
      { path: "recipe.required_signals[1]", message: "absentee_owner is also in excluded_signals" },
    ]);
  });

  it("rejects a weight on an excluded signal", () => {
    expect(
      issuesOf({
        signals: { absentee_owner: 0.5, corporate_owner: 0.5 },
        excluded_signals: ["corporate_owner"],
        min_score: 0.5,
      }),
    ).toEqual([
      {
        path: "recipe.signals.corporate_owner",
        message: "is in excluded_signals, so its weight could never count",
      },
    ]);
  });

  it("rejects a negative weight on a required signal", () => {
    expect(
      issuesOf({
        signals: { absentee_owner: 0.5, corporate_owner: -0.5 },
        required_signals: ["corporate_owner"],
      }),
    ).toEqual([
      {
        path: "recipe.signals.corporate_owner",
        message: "a required signal must not have a negative weight",
      },
    ]);
  });
});

describe("min_score", () => {
  it("must be within [0, 1]", () => {
    for (const minScore of [-0.1, 1.01, 50]) {
      expect(
        issuesOf({ filters: { counties: [23] }, signals: { high_equity: 1 }, min_score: minScore }),
      ).toEqual([{ path: "recipe.min_score", message: "must be between 0 and 1" }]);
    }
  });

  it("has no effect, so is refused, without weighted signals", () => {
    expect(issuesOf({ filters: { counties: [23] }, min_score: 0.5 })).toEqual([
      {
        path: "recipe.min_score",
        message: "has no effect without weighted signals (a recipe without signals scores 1)",
      },
    ]);
  });
});

describe("filters", () => {
  it("rejects a range whose min exceeds its max, at the min", () => {
    expect(issuesOf({ filters: { just_value: { min: 800_000, max: 100_000 } } })).toEqual([
      { path: "recipe.filters.just_value.min", message: "must be <= max" },
    ]);
  });

  it("rejects a range with neither bound", () => {
    expect(issuesOf({ filters: { est_equity: {} } })).toEqual([
      { path: "recipe.filters.est_equity", message: "needs min, max or both" },
    ]);
  });

  it("checks each range's own bounds", () => {
    expect(
      issuesOf({
        filters: {
          just_value: { min: -1 },
          equity_ratio: { min: 50 },
          year_built: { min: 1950.5, max: 2300 },
          last_sale_age_years: { min: -2 },
          est_equity: { min: "lots" },
        },
      }),
    ).toEqual([
      { path: "recipe.filters.just_value.min", message: "must be >= 0" },
      { path: "recipe.filters.est_equity.min", message: "must be a number" },
      {
        path: "recipe.filters.equity_ratio.min",
        message: "must be <= 1 (equity_ratio is a fraction: 0.5 means 50%)",
      },
      { path: "recipe.filters.year_built.min", message: "must be a whole number" },
      { path: "recipe.filters.year_built.max", message: "must be <= 2200" },
      { path: "recipe.filters.last_sale_age_years.min", message: "must be >= 0" },
    ]);
  });

  it("accepts negative equity bounds (negative equity is a lead too)", () => {
    expect(
      validateRecipe({ filters: { est_equity: { max: -1 }, equity_ratio: { max: 0 } } }).ok,
    ).toBe(true);
  });

  it("rejects empty lists: leaving the filter out is how to allow any", () => {
    expect(issuesOf({ filters: { counties: [], cities: [] } })).toEqual([
      {
        path: "recipe.filters.counties",
        message: "must list at least one county (leave the filter out to allow any)",
      },
      {
        path: "recipe.filters.cities",
        message: "must list at least one city (leave the filter out to allow any)",
      },
    ]);
  });

  it("checks each list entry's form", () => {
    expect(
      issuesOf({
        filters: {
          counties: [23, 10, 78, 23.5],
          cities: [" "],
          zip_codes: ["33125", "3312", "33125-1234"],
          use_classes: ["residential", "condo"],
          dor_use_codes: ["1"],
        },
      }),
    ).toEqual([
      { path: "recipe.filters.counties[1]", message: "must be a DOR county number from 11 to 77" },
      { path: "recipe.filters.counties[2]", message: "must be a DOR county number from 11 to 77" },
      { path: "recipe.filters.counties[3]", message: "must be a whole number" },
      { path: "recipe.filters.cities[0]", message: "must not be blank" },
      { path: "recipe.filters.zip_codes[1]", message: "must be a 5-digit ZIP code" },
      { path: "recipe.filters.zip_codes[2]", message: "must be a 5-digit ZIP code" },
      {
        path: "recipe.filters.use_classes[1]",
        message:
          'unknown use class "condo"; one of residential, commercial, industrial, agricultural, institutional, governmental, miscellaneous',
      },
      {
        path: "recipe.filters.dor_use_codes[0]",
        message: 'must be a 3-digit DOR land-use code such as "001"',
      },
    ]);
  });

  it("caps list length", () => {
    const zips = Array.from({ length: 501 }, (_, index) => String(10_000 + index));
    expect(issuesOf({ filters: { zip_codes: zips } })).toEqual([
      { path: "recipe.filters.zip_codes", message: "must list at most 500 entries" },
    ]);
  });

  it("rejects a homestead filter that is not a boolean", () => {
    expect(issuesOf({ filters: { homestead: "no" } })).toEqual([
      { path: "recipe.filters.homestead", message: "must be true or false" },
    ]);
  });

  it("rejects unknown mailing states and names the entry", () => {
    expect(
      issuesOf({ filters: { owner_mailing_states: { include: ["FL", "Floridaa"] } } }),
    ).toEqual([
      {
        path: "recipe.filters.owner_mailing_states.include[1]",
        message:
          'unknown US state "Floridaa"; use a USPS code such as "FL" or a full name such as "Florida"',
      },
    ]);
  });

  it("rejects a state both included and excluded, whatever its spelling", () => {
    expect(
      issuesOf({
        filters: { owner_mailing_states: { include: ["FL", "GA"], exclude: ["TX", "florida"] } },
      }),
    ).toEqual([
      { path: "recipe.filters.owner_mailing_states.exclude[1]", message: "FL is also in include" },
    ]);
  });

  it("needs include or exclude in owner_mailing_states", () => {
    expect(issuesOf({ filters: { owner_mailing_states: {} } })).toEqual([
      { path: "recipe.filters.owner_mailing_states", message: "needs include, exclude or both" },
    ]);
  });
});

describe("normalizeStateCode", () => {
  it("maps FL and FLORIDA in any case and spacing to FL", () => {
    for (const spelling of ["FL", "fl", " Fl ", "FLORIDA", "Florida", "florida"]) {
      expect(normalizeStateCode(spelling)).toBe("FL");
    }
  });

  it("maps multi-word names, DC and territories", () => {
    expect(normalizeStateCode("new  york")).toBe("NY");
    expect(normalizeStateCode("District of Columbia")).toBe("DC");
    expect(normalizeStateCode("D.C.")).toBe("DC");
    expect(normalizeStateCode("Puerto Rico")).toBe("PR");
  });

  it("returns null for anything that is not a US state", () => {
    for (const spelling of ["", "XX", "ONTARIO", "FLA"]) {
      expect(normalizeStateCode(spelling)).toBeNull();
    }
  });
});

describe("catalogue and helpers", () => {
  it("describes every catalogue signal and nothing else", () => {
    expect(Object.keys(LEAD_SIGNAL_DESCRIPTIONS).sort()).toEqual([...LEAD_SIGNALS].sort());
    expect(new Set(LEAD_SIGNALS).size).toBe(LEAD_SIGNALS.length);
  });

  it("uses the names the parcels contract samples emit", () => {
    // The `parcel.ingested` sample's signals_fired; recipes must be able to name each of them.
    for (const signal of [
      "absentee_owner",
      "out_of_state_owner",
      "long_term_owner",
      "high_equity",
    ]) {
      expect(LEAD_SIGNALS).toContain(signal);
    }
  });

  it("formats paths with dots for keys and brackets for indices", () => {
    expect(formatIssuePath("recipe", ["filters", "counties", 0])).toBe(
      "recipe.filters.counties[0]",
    );
    expect(formatIssuePath("body.recipe", [])).toBe("body.recipe");
    expect(formatIssuePath("", ["signals", "x"])).toBe("signals.x");
  });

  it("takes another root for recipes nested in a request body", () => {
    const result = validateRecipe({ filters: { counties: [] } }, "body.recipe");
    expect(result.ok ? [] : result.issues.map((issue) => issue.path)).toEqual([
      "body.recipe.filters.counties",
    ]);
  });

  it("does not rewrite its input, so it describes responses as well as requests", () => {
    const recipe = { filters: { owner_mailing_states: { exclude: ["Florida"] } } };
    expect(recipeSchema.parse(recipe)).toEqual(recipe);
  });
});

describe("bodyIssues", () => {
  const schema = z.strictObject({ name: z.string(), recipe: z.strictObject({ size: z.number() }) });

  it("is undefined for a body its schema accepts", () => {
    expect(bodyIssues(schema, { name: "a", recipe: { size: 1 } })).toBeUndefined();
  });

  it("names every failing path from body, one unknown field per key", () => {
    const issues = bodyIssues(schema, { name: 1, recipe: { size: 1, colour: "red", shape: 2 } });
    expect(issues?.fields.map((field) => field.path)).toEqual([
      "body.name",
      "body.recipe.colour",
      "body.recipe.shape",
    ]);
    expect(issues?.message).toMatch(
      /^invalid body: body\.name .+; body\.recipe\.colour unknown field; body\.recipe\.shape unknown field$/,
    );
  });
});
