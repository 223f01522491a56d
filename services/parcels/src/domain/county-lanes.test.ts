import { describe, expect, it } from "vitest";
import { countyLanes } from "./county-lanes.ts";

describe("countyLanes", () => {
  it("puts each county's files in one lane, in the order given, so they never load side by side", () => {
    const lanes = countyLanes([
      "/r/NAL16F202501.csv",
      "/r/NAL23P202501.csv",
      "/r/NAL60F202501.csv",
      "/r/NAL23F202501.csv",
    ]);
    expect(lanes).toEqual([
      { countyNo: 23, files: ["/r/NAL23P202501.csv", "/r/NAL23F202501.csv"] },
      { countyNo: 16, files: ["/r/NAL16F202501.csv"] },
      { countyNo: 60, files: ["/r/NAL60F202501.csv"] },
    ]);
  });

  it("gives a file whose name names no county a lane of its own, taken for no county", () => {
    expect(countyLanes(["/r/roll.csv", "/r/other.csv"])).toEqual([
      { countyNo: null, files: ["/r/roll.csv"] },
      { countyNo: null, files: ["/r/other.csv"] },
    ]);
  });
});
