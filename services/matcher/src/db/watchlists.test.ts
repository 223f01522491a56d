import { describe, expect, it } from "vitest";
import { normalizeRecipe } from "../domain/recipe.ts";
import { pageOf, rowVersion, type WatchlistRow } from "./watchlists.ts";

describe("watchlist pages", () => {
  it("show at most the limit and say more follow only when the extra row was read", () => {
    expect(pageOf([1, 2, 3], 2)).toEqual({ shown: [1, 2], more: true });
    expect(pageOf([1, 2], 2)).toEqual({ shown: [1, 2], more: false });
    expect(pageOf([], 2)).toEqual({ shown: [], more: false });
  });
});

describe("a watchlist row's recipe version", () => {
  it("is its current version with that version's recipe, fingerprint and start", () => {
    const recipe = normalizeRecipe({ filters: { counties: [23] }, signals: { high_equity: 1 } });
    const row: WatchlistRow = {
      id: "wl_0a",
      tenant_id: "ten_1",
      name: "Dade equity",
      current_version: 3,
      created_at: new Date("2026-01-01T00:00:00.000Z"),
      updated_at: new Date("2026-02-01T00:00:00.000Z"),
      recipe,
      fingerprint: "f00d",
      effective_from: new Date("2026-02-01T00:00:00.000Z"),
      match_count: "4",
      last_match_at: null,
    };
    expect(rowVersion(row)).toEqual({
      watchlist_id: "wl_0a",
      version: 3,
      recipe,
      fingerprint: "f00d",
      effective_from: "2026-02-01T00:00:00.000Z",
    });
  });
});
