import { describe, expect, it } from "vitest";
import {
  EMPTY_PIPELINE_FILTERS,
  exportQuery,
  isDue,
  parseTags,
  pipelineQuery,
  utcToday,
} from "./pipeline-logic.ts";

describe("pipeline page logic", () => {
  it("builds the listing's query from the filters, leaving blanks out and naming the member for 'me'", () => {
    expect(pipelineQuery(EMPTY_PIPELINE_FILTERS, "mem_1")).toEqual({
      sort: "-updated_at",
      limit: 50,
    });
    expect(
      pipelineQuery(
        { ...EMPTY_PIPELINE_FILTERS, assignee: "me", tag: " hot ", q: "x", stage_id: "stg_1" },
        "mem_1",
        { cursor: "c" },
      ),
    ).toEqual({
      sort: "-updated_at",
      limit: 50,
      assignee_id: "mem_1",
      tag: "hot",
      stage_id: "stg_1",
      cursor: "c",
    });
    expect(exportQuery({ ...EMPTY_PIPELINE_FILTERS, assignee: "none" }, "mem_1")).toBe(
      "?assignee_id=none",
    );
    expect(exportQuery(EMPTY_PIPELINE_FILTERS, "mem_1")).toBe("");
  });

  it("reads tags as typed and counts a follow-up due on or before today, in UTC", () => {
    expect(parseTags("Hot, absentee,, hot ")).toEqual(["hot", "absentee"]);
    expect(utcToday(new Date("2026-11-21T23:30:00-05:00"))).toBe("2026-11-22");
    expect(isDue("2026-11-22", "2026-11-22")).toBe(true);
    expect(isDue("2026-11-23", "2026-11-22")).toBe(false);
    expect(isDue(null, "2026-11-22")).toBe(false);
  });
});
