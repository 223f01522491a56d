import { parcelIngested, parcelIngestedSparse } from "@th/contracts/samples";
import { describe, expect, it } from "vitest";
import { rng, syntheticParcel, syntheticRecipe } from "../testing/synthetic.ts";
import { compileRecipe, evaluateRecipe } from "./evaluate.ts";
import { compilePredicate, parcelFacts, UnjudgeableParcelError } from "./predicate.ts";
import { normalizeRecipe } from "./recipe.ts";
import { compileVersions, RecipeIndex } from "./recipe-index.ts";
import { recipeVersionInForce } from "./versions.ts";

describe("compilePredicate agrees with evaluateRecipe", () => {
  it("on 20,000 random recipe and parcel pairs, sparse parcels included", () => {
    const random = rng(7);
    let matched = 0;
    for (let round = 0; round < 400; round++) {
      const compiled = compileRecipe(syntheticRecipe(random, { broad: true }));
      const predicate = compilePredicate(compiled);
      for (let index = 0; index < 50; index++) {
        const parcel = syntheticParcel(random, round * 50 + index, { sparseShare: 0.2 });
        const expected = evaluateRecipe(compiled, parcel).matched;
        if (predicate(parcelFacts(parcel)) !== expected) {
          expect.fail(`disagree on ${JSON.stringify({ recipe: compiled.recipe, parcel })}`);
        }
        matched += expected ? 1 : 0;
      }
    }
    // Both outcomes are well represented, so the agreement means something.
    expect(matched).toBeGreaterThan(500);
  });

  it("on the contract samples", () => {
    for (const parcel of [parcelIngested, parcelIngestedSparse]) {
      const compiled = compileRecipe({ filters: { counties: [23] }, signals: { high_equity: 1 } });
      expect(compilePredicate(compiled)(parcelFacts(parcel))).toBe(
        evaluateRecipe(compiled, parcel).matched,
      );
    }
  });

  it("refuses to judge a parcel whose observed_at is not an instant", () => {
    expect(() => parcelFacts({ ...parcelIngested, observed_at: "yesterday" })).toThrow(
      UnjudgeableParcelError,
    );
  });
});

describe("RecipeIndex", () => {
  it("finds exactly what testing every watchlist finds", () => {
    // The naive side tests every watchlist with its predicate, which the test above proves
    // equal to evaluateRecipe (and is fast enough to run 1.8 million times here).
    const random = rng(11);
    const watchlists = Array.from({ length: 600 }, (_, index) => ({
      id: `wl_${index}`,
      compiled: compileRecipe(syntheticRecipe(random)),
    }));
    const predicates = watchlists.map((watchlist) => compilePredicate(watchlist.compiled));
    const index = new RecipeIndex(
      watchlists.flatMap((watchlist) =>
        compileVersions(watchlist.id, [
          { version: 1, recipe: watchlist.compiled.recipe, effectiveFromMs: 0 },
        ]),
      ),
    );
    expect(index.stats.unindexed).toBeLessThan(60);
    let total = 0;
    for (let n = 0; n < 3000; n++) {
      const parcel = syntheticParcel(random, n, { sparseShare: 0.1 });
      const facts = parcelFacts(parcel);
      const naive = watchlists
        .filter((_, at) => predicates[at]?.(facts))
        .map((watchlist) => watchlist.id)
        .sort();
      const indexed = index
        .matching(facts)
        .map((entry) => entry.watchlist)
        .sort();
      expect(indexed).toEqual(naive);
      total += naive.length;
    }
    expect(total).toBeGreaterThan(100);
  });

  it("judges a parcel by the version in force when it was observed, as recipeVersionInForce does", () => {
    const countyOnly = (county: number) => normalizeRecipe({ filters: { counties: [county] } });
    const t1 = Date.parse("2025-01-01T00:00:00.000Z");
    const t2 = Date.parse("2025-06-01T00:00:00.000Z");
    const versions = [
      { version: 1, recipe: countyOnly(23), effectiveFromMs: t1 },
      { version: 2, recipe: countyOnly(16), effectiveFromMs: t2 },
      // Saved at the same instant (clock stepped back): the higher version wins from t2 on.
      { version: 3, recipe: countyOnly(23), effectiveFromMs: t2 },
    ];
    const index = new RecipeIndex(compileVersions("wl", versions));
    const asVersions = versions.map((v) => ({
      watchlist_id: "wl",
      version: v.version,
      recipe: v.recipe,
      fingerprint: String(v.version),
      effective_from: new Date(v.effectiveFromMs).toISOString(),
    }));
    for (const observed of [
      "2024-12-31T23:59:59.999Z",
      "2025-01-01T00:00:00.000Z",
      "2025-05-31T00:00:00.000Z",
      "2025-06-01T00:00:00.000Z",
      "2026-01-01T00:00:00.000Z",
    ]) {
      for (const county of [23, 16]) {
        const parcel = { ...parcelIngested, county_no: county, observed_at: observed };
        const inForce = recipeVersionInForce(asVersions, observed);
        const expected =
          inForce && evaluateRecipe(inForce.recipe, parcel).matched ? [inForce.version] : [];
        expect(index.matching(parcelFacts(parcel)).map((entry) => entry.version)).toEqual(expected);
      }
    }
  });
});
