import { describe, expect, it } from "vitest";
import {
  dailySeries,
  EMPTY_FILTERS,
  EMPTY_RECIPE_FORM,
  fieldMessages,
  formFromRecipe,
  leadQuery,
  mcpSnippet,
  readCookie,
  recipeFromForm,
  rotationReminder,
  trialDaysLeft,
} from "./logic.ts";

describe("the page's CSRF token", () => {
  it("is read from the th_csrf cookie among others", () => {
    expect(readCookie("a=1; th_csrf=abc%3D%3D; th_other=2", "th_csrf")).toBe("abc==");
    expect(readCookie("a=1", "th_csrf")).toBeNull();
  });
});

describe("the key rotation reminder", () => {
  it("K2 appears only on an active key the API says is due (older than 90 days)", () => {
    expect(rotationReminder({ age_days: 90, revoked: false, rotation_due: false })).toBeNull();
    expect(rotationReminder({ age_days: 90, revoked: false, rotation_due: true })).toMatch(
      /90 days old/,
    );
    expect(rotationReminder({ age_days: 400, revoked: true, rotation_due: true })).toBeNull();
  });
});

describe("trial days left", () => {
  it("count whole days up, never below zero", () => {
    const now = new Date("2026-11-22T12:00:00Z");
    expect(trialDaysLeft("2026-12-06T12:00:00Z", now)).toBe(14);
    expect(trialDaysLeft("2026-11-22T13:00:00Z", now)).toBe(1);
    expect(trialDaysLeft("2026-11-01T00:00:00Z", now)).toBe(0);
  });
});

describe("the daily chart", () => {
  it("has one bar per day of the period so far, zero where nothing was read", () => {
    const series = dailySeries(
      [{ day: "2026-11-23", lead_views: 4 }],
      "2026-11-22",
      new Date("2026-11-24T08:00:00Z"),
    );
    expect(series).toEqual([
      { day: "2026-11-22", count: 0 },
      { day: "2026-11-23", count: 4 },
      { day: "2026-11-24", count: 0 },
    ]);
  });
});

describe("the lead search query", () => {
  it("leaves empty filters out and joins signals with commas", () => {
    expect(leadQuery(EMPTY_FILTERS)).toBe("");
    expect(
      leadQuery(
        {
          ...EMPTY_FILTERS,
          county: "23",
          city: " Miami ",
          signals: ["high_equity", "absentee_owner"],
        },
        { limit: "25" },
      ),
    ).toBe("?county=23&city=Miami&signals=high_equity%2Cabsentee_owner&limit=25");
  });
});

describe("the recipe form", () => {
  it("round-trips through the JSON view", () => {
    const form = {
      ...EMPTY_RECIPE_FORM,
      counties: "23, 6",
      cities: "Miami",
      use_classes: ["residential"],
      min_just_value: "100000",
      required_signals: ["absentee_owner"],
      min_score: "0.4",
    };
    const recipe = recipeFromForm(form);
    expect(recipe).toEqual({
      filters: {
        counties: [23, 6],
        cities: ["Miami"],
        use_classes: ["residential"],
        just_value: { min: 100000 },
      },
      required_signals: ["absentee_owner"],
      min_score: 0.4,
    });
    expect(formFromRecipe(recipe)).toEqual({ ...form, counties: "23, 6" });
  });

  it("sends what was typed so the API's validation speaks", () => {
    expect(recipeFromForm({ ...EMPTY_RECIPE_FORM, counties: "dade" })).toEqual({
      filters: { counties: ["dade"] },
    });
    expect(
      fieldMessages({ fields: [{ path: "body.recipe.filters.counties.0", message: "bad" }] }),
    ).toEqual(["body.recipe.filters.counties.0: bad"]);
  });
});

describe("the MCP snippet", () => {
  it("points at /mcp and keeps the key in TERMINAL_HOUSE_API_KEY", () => {
    const snippet = JSON.parse(mcpSnippet("https://api.terminal.house"));
    expect(snippet.mcpServers["terminal-house"].url).toBe("https://api.terminal.house/mcp");
    expect(snippet.mcpServers["terminal-house"].headers.Authorization).toContain(
      "TERMINAL_HOUSE_API_KEY",
    );
    expect(JSON.stringify(snippet)).not.toMatch(/th_live_/);
  });
});
