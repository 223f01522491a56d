import { describe, expect, it } from "vitest";
import { z } from "zod";
import { toRecipeIssues } from "./recipe.ts";
import {
  watchlistCreateSchema,
  watchlistListSchema,
  watchlistSchema,
  watchlistUpdateSchema,
} from "./watchlist.ts";

const recipe = { filters: { counties: [23] }, signals: { absentee_owner: 1 }, min_score: 0.5 };

function pathsOf(result: ReturnType<typeof watchlistCreateSchema.safeParse>): string[] {
  return result.success ? [] : toRecipeIssues(result.error, "body").map((issue) => issue.path);
}

describe("watchlist create body", () => {
  it("accepts a name and a recipe", () => {
    const body = { name: "Absentee owners, Miami-Dade", recipe };
    expect(watchlistCreateSchema.parse(body)).toEqual(body);
  });

  it("takes names of 1 to 120 characters", () => {
    expect(watchlistCreateSchema.safeParse({ name: "x", recipe }).success).toBe(true);
    expect(watchlistCreateSchema.safeParse({ name: "x".repeat(120), recipe }).success).toBe(true);
    const tooLong = watchlistCreateSchema.safeParse({ name: "x".repeat(121), recipe });
    expect(tooLong.success ? [] : toRecipeIssues(tooLong.error, "body")).toEqual([
      { path: "body.name", message: "must be at most 120 characters" },
    ]);
  });

  it("rejects empty, blank and control-character names", () => {
    const messages = (name: string) => {
      const result = watchlistCreateSchema.safeParse({ name, recipe });
      return result.success ? [] : toRecipeIssues(result.error, "body").map((i) => i.message);
    };
    expect(messages("")).toEqual(["must not be empty", "must not be blank"]);
    expect(messages("   ")).toEqual(["must not be blank"]);
    expect(messages("line\nbreak")).toEqual(["must not contain control characters"]);
  });

  it("reports recipe problems under body.recipe", () => {
    const result = watchlistCreateSchema.safeParse({
      name: "x",
      recipe: { filters: { just_value: { min: 5, max: 1 } } },
    });
    expect(pathsOf(result)).toEqual(["body.recipe.filters.just_value.min"]);
  });

  it("requires both fields and rejects unknown ones", () => {
    expect(pathsOf(watchlistCreateSchema.safeParse({ name: "x", owner: "me" }))).toEqual([
      "body.recipe",
      "body.owner",
    ]);
  });
});

describe("watchlist update body", () => {
  it("accepts a name, a recipe or both", () => {
    expect(watchlistUpdateSchema.safeParse({ name: "renamed" }).success).toBe(true);
    expect(watchlistUpdateSchema.safeParse({ recipe }).success).toBe(true);
    expect(watchlistUpdateSchema.safeParse({ name: "renamed", recipe }).success).toBe(true);
  });

  it("rejects an empty update", () => {
    const result = watchlistUpdateSchema.safeParse({});
    expect(result.success ? [] : toRecipeIssues(result.error, "body")).toEqual([
      { path: "body", message: "needs name, recipe or both" },
    ]);
  });
});

describe("watchlist record", () => {
  const record = {
    id: "wl_absentee_miami",
    name: "Absentee owners, Miami-Dade",
    recipe,
    recipe_version: 3,
    recipe_fingerprint: "a".repeat(64),
    recipe_effective_from: "2025-10-01T00:00:00.000Z",
    created_at: "2025-09-30T09:30:00.000Z",
    updated_at: "2025-10-01T00:00:00.000Z",
    last_match_at: null,
    match_count: 0,
  };

  it("parses a full record", () => {
    expect(watchlistSchema.parse(record)).toEqual(record);
    expect(
      watchlistSchema.parse({
        ...record,
        last_match_at: "2025-10-14T06:12:45.002Z",
        match_count: 12,
      }).match_count,
    ).toBe(12);
  });

  it("rejects a version below 1 and a malformed timestamp", () => {
    expect(watchlistSchema.safeParse({ ...record, recipe_version: 0 }).success).toBe(false);
    expect(watchlistSchema.safeParse({ ...record, created_at: "yesterday" }).success).toBe(false);
  });

  it("pages records with an opaque cursor", () => {
    const page = { data: [record], next_cursor: null };
    expect(watchlistListSchema.parse(page)).toEqual(page);
  });
});

describe("OpenAPI", () => {
  it("converts every watchlist schema to JSON Schema, recipe included", () => {
    for (const schema of [watchlistCreateSchema, watchlistUpdateSchema, watchlistSchema]) {
      for (const io of ["input", "output"] as const) {
        const json = JSON.stringify(z.toJSONSchema(schema, { io }));
        expect(json).toContain('"Recipe"');
        expect(json).toContain('"absentee_owner"');
      }
    }
  });
});
