import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { RecipeEditor, type Watchlist } from "./watchlists.tsx";

const existing: Watchlist = {
  id: "wl_1",
  name: "Dade equity",
  recipe: { filters: { counties: [23] }, signals: { high_equity: 1 } },
  recipe_version: 2,
  recipe_fingerprint: "f1",
  recipe_effective_from: "2026-01-01T00:00:00.000Z",
  match_count: 0,
  last_match_at: null,
  created_at: "2026-01-01T00:00:00.000Z",
  updated_at: "2026-01-01T00:00:00.000Z",
};

describe("the recipe editor", () => {
  it("opens on the form for a new watchlist, with no cancel", () => {
    const html = renderToStaticMarkup(<RecipeEditor onSaved={() => {}} />);
    expect(html).toContain("Create watchlist");
    expect(html).toMatch(/aria-pressed="true"[^>]*>Form</);
    expect(html).toContain("Required signals");
    expect(html).not.toContain("Cancel");
  });

  it("opens an existing watchlist's recipe in the form, to save or cancel", () => {
    const html = renderToStaticMarkup(
      <RecipeEditor initial={existing} onSaved={() => {}} onCancel={() => {}} />,
    );
    expect(html).toContain("Save recipe");
    expect(html).toContain('value="Dade equity"');
    expect(html).toContain('value="23"');
    expect(html).toContain("Cancel");
  });
});
