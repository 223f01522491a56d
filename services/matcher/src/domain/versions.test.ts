import type { Recipe } from "@th/api-schemas";
import { describe, expect, it } from "vitest";
import { normalizeRecipe, recipeFingerprint } from "./recipe.ts";
import { nextRecipeVersion, type RecipeVersion, recipeVersionInForce } from "./versions.ts";

function version(number: number, effectiveFrom: string, recipe: Recipe): RecipeVersion {
  return {
    watchlist_id: "wl_1",
    version: number,
    recipe: normalizeRecipe(recipe),
    fingerprint: recipeFingerprint(recipe),
    effective_from: effectiveFrom,
  };
}

const v1 = version(1, "2025-01-01T00:00:00.000Z", { filters: { counties: [23] } });
const v2 = version(2, "2025-06-01T12:00:00.000Z", { filters: { counties: [16] } });
const v3 = version(3, "2025-09-01T00:00:00.000Z", { filters: { counties: [58] } });

describe("recipeVersionInForce", () => {
  it("has none before the first version came into force", () => {
    expect(recipeVersionInForce([v1, v2, v3], "2024-12-31T23:59:59.999Z")).toBeUndefined();
    expect(recipeVersionInForce([], "2025-07-01T00:00:00.000Z")).toBeUndefined();
  });

  it("applies a version from its effective instant on (inclusive)", () => {
    expect(recipeVersionInForce([v1, v2, v3], "2025-06-01T12:00:00.000Z")?.version).toBe(2);
    expect(recipeVersionInForce([v1, v2, v3], "2025-06-01T11:59:59.999Z")?.version).toBe(1);
  });

  it("keeps the last version in force after it", () => {
    expect(recipeVersionInForce([v1, v2, v3], "2030-01-01T00:00:00.000Z")?.version).toBe(3);
  });

  it("does not depend on the order versions are listed in", () => {
    expect(recipeVersionInForce([v3, v1, v2], "2025-07-01T00:00:00.000Z")?.version).toBe(2);
  });

  it("takes the higher version when two share an instant", () => {
    const sameInstant = { ...v3, version: 4, effective_from: v3.effective_from };
    expect(recipeVersionInForce([sameInstant, v3], "2025-09-02T00:00:00.000Z")?.version).toBe(4);
  });

  it("compares instants, not strings", () => {
    const offset = { ...v2, effective_from: "2025-06-01T14:00:00+02:00" };
    expect(recipeVersionInForce([v1, offset], "2025-06-01T12:00:00.000Z")?.version).toBe(2);
  });

  it("refuses an instant it cannot read", () => {
    expect(() => recipeVersionInForce([v1], "last tuesday")).toThrow(RangeError);
  });
});

describe("nextRecipeVersion", () => {
  const now = "2025-10-14T06:00:00.000Z";

  it("starts at version 1, in force from now", () => {
    const change = nextRecipeVersion(undefined, "wl_1", { filters: { counties: [23] } }, now);
    expect(change).toEqual({
      changed: true,
      version: {
        watchlist_id: "wl_1",
        version: 1,
        recipe: normalizeRecipe({ filters: { counties: [23] } }),
        fingerprint: recipeFingerprint({ filters: { counties: [23] } }),
        effective_from: now,
      },
    });
  });

  it("keeps the current version when the recipe means the same", () => {
    const current = version(3, "2025-09-01T00:00:00.000Z", {
      filters: { counties: [23], owner_mailing_states: { exclude: ["FL"] } },
    });
    const resaved: Recipe = {
      filters: { owner_mailing_states: { exclude: ["Florida"] }, counties: [23, 23] },
      min_score: 0,
    };
    expect(nextRecipeVersion(current, "wl_1", resaved, now)).toEqual({
      changed: false,
      version: current,
    });
  });

  it("numbers a changed recipe next, in force from now", () => {
    const change = nextRecipeVersion(v3, "wl_1", { filters: { counties: [11] } }, now);
    expect(change.changed).toBe(true);
    expect(change.version.version).toBe(4);
    expect(change.version.effective_from).toBe(now);
    expect(change.version.recipe.filters).toEqual({ counties: [11] });
  });

  it("never moves effective_from back in time when the clock steps back", () => {
    const future = { ...v3, effective_from: "2025-10-14T06:00:05.000Z" };
    const change = nextRecipeVersion(future, "wl_1", { filters: { counties: [11] } }, now);
    expect(change.version.effective_from).toBe("2025-10-14T06:00:05.000Z");
    // Both versions share the instant; the newer number wins from then on.
    expect(
      recipeVersionInForce([future, change.version], "2025-10-14T06:00:05.000Z")?.version,
    ).toBe(4);
  });

  it("writes effective_from in the contracts' instant form", () => {
    const change = nextRecipeVersion(
      undefined,
      "wl_1",
      { filters: { counties: [23] } },
      "2025-10-14T08:00:00+02:00",
    );
    expect(change.version.effective_from).toBe("2025-10-14T06:00:00.000Z");
  });
});
