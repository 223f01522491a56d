import { describe, expect, it } from "vitest";
import { readConfig } from "./config.ts";

describe("the ledger's retention settings (decision 0393)", () => {
  it("keeps lead-views as long as leadview.recorded keeps its events unless told otherwise", () => {
    expect(readConfig({})).toMatchObject({
      LEAD_VIEW_RETENTION_DAYS: 400,
      LEAD_VIEW_VOID_WINDOW_DAYS: 7,
    });
  });

  it("refuses a lead-view retention shorter than a billing period", () => {
    expect(() => readConfig({ LEAD_VIEW_RETENTION_DAYS: "31" })).toThrow(
      /LEAD_VIEW_RETENTION_DAYS/,
    );
    expect(readConfig({ LEAD_VIEW_RETENTION_DAYS: "32" }).LEAD_VIEW_RETENTION_DAYS).toBe(32);
  });
});
