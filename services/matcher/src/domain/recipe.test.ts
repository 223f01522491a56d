import { type Recipe, recipeSchema } from "@th/api-schemas";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "./canonical-json.ts";
import { normalizeRecipe, recipeFingerprint } from "./recipe.ts";

const recipe: Recipe = {
  filters: {
    counties: [23, 16, 23],
    cities: ["miami", " Miami  Beach "],
    use_classes: ["commercial", "residential"],
    just_value: { min: 100_000, max: 800_000 },
    owner_mailing_states: { exclude: ["Florida", "FL", "georgia"] },
    homestead: false,
  },
  signals: { high_equity: 0.6, absentee_owner: 0.4 },
  required_signals: ["high_equity", "absentee_owner", "high_equity"],
  min_score: 0.5,
};

/** The same object with every key order reversed, at every depth. */
function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map(reverseKeys);
  }
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([key, inner]) => [key, reverseKeys(inner)]),
    );
  }
  return value;
}

describe("normalizeRecipe", () => {
  it("sorts and de-duplicates lists, upper-cases cities, spells states as codes, fills defaults", () => {
    expect(normalizeRecipe(recipe)).toEqual({
      filters: {
        counties: [16, 23],
        cities: ["MIAMI", "MIAMI BEACH"],
        use_classes: ["residential", "commercial"],
        just_value: { min: 100_000, max: 800_000 },
        owner_mailing_states: { exclude: ["FL", "GA"] },
        homestead: false,
      },
      signals: { absentee_owner: 0.4, high_equity: 0.6 },
      required_signals: ["absentee_owner", "high_equity"],
      excluded_signals: [],
      min_score: 0.5,
      allow_match_all: false,
    });
  });

  it("yields a recipe the shared schema still accepts (it is what the API returns)", () => {
    expect(recipeSchema.safeParse(normalizeRecipe(recipe)).success).toBe(true);
    expect(recipeSchema.safeParse(normalizeRecipe({ allow_match_all: true })).success).toBe(true);
  });

  it("is idempotent", () => {
    const once = normalizeRecipe(recipe);
    expect(normalizeRecipe(once)).toEqual(once);
  });

  it("makes defaults explicit for a minimal recipe", () => {
    expect(normalizeRecipe({ filters: { counties: [23] } })).toEqual({
      filters: { counties: [23] },
      signals: {},
      required_signals: [],
      excluded_signals: [],
      min_score: 0,
      allow_match_all: false,
    });
  });
});

describe("recipeFingerprint", () => {
  const fingerprint = recipeFingerprint(recipe);

  it("is a hex SHA-256", () => {
    expect(fingerprint).toMatch(/^[0-9a-f]{64}$/);
  });

  it("is stable under key reordering at every depth", () => {
    expect(recipeFingerprint(reverseKeys(recipe) as Recipe)).toBe(fingerprint);
  });

  it("is stable under list order, duplicates, state spelling and city case", () => {
    const sameMeaning: Recipe = {
      ...recipe,
      filters: {
        ...recipe.filters,
        counties: [16, 23],
        cities: ["MIAMI BEACH", "MIAMI"],
        use_classes: ["residential", "commercial"],
        owner_mailing_states: { exclude: ["GA", "FL"] },
      },
      required_signals: ["absentee_owner", "high_equity"],
    };
    expect(recipeFingerprint(sameMeaning)).toBe(fingerprint);
  });

  it("is stable when defaults are written out", () => {
    expect(recipeFingerprint({ ...recipe, excluded_signals: [], allow_match_all: false })).toBe(
      fingerprint,
    );
    expect(recipeFingerprint({ filters: { counties: [23] } })).toBe(
      recipeFingerprint({ filters: { counties: [23] }, signals: {}, min_score: 0 }),
    );
  });

  it("changes with anything that changes matching or scoring", () => {
    const changes: Recipe[] = [
      { ...recipe, min_score: 0.55 },
      { ...recipe, signals: { high_equity: 0.6, absentee_owner: 0.3 } },
      { ...recipe, filters: { ...recipe.filters, homestead: true } },
      { ...recipe, filters: { ...recipe.filters, just_value: { min: 100_000 } } },
      { ...recipe, excluded_signals: ["corporate_owner"] },
      { ...recipe, allow_match_all: true },
    ];
    const fingerprints = new Set(changes.map(recipeFingerprint));
    expect(fingerprints.size).toBe(changes.length);
    expect(fingerprints.has(fingerprint)).toBe(false);
  });
});

describe("canonicalJson", () => {
  it("sorts keys at every depth and keeps array order", () => {
    expect(canonicalJson({ b: [3, 1, { d: 1, c: 2 }], a: "x" })).toBe(
      '{"a":"x","b":[3,1,{"c":2,"d":1}]}',
    );
  });

  it("leaves out undefined properties and writes -0 as 0", () => {
    expect(canonicalJson({ a: undefined, b: -0, c: null })).toBe('{"b":0,"c":null}');
  });

  it("refuses values JSON cannot carry", () => {
    expect(() => canonicalJson({ a: Number.NaN })).toThrow(TypeError);
    expect(() => canonicalJson({ a: Number.POSITIVE_INFINITY })).toThrow(TypeError);
    expect(() => canonicalJson({ a: 1n })).toThrow(TypeError);
  });
});
