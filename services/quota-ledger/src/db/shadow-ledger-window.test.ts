import { describe, expect, it } from "vitest";
import { windowParameters } from "./shadow-ledger.ts";

describe("the replayed window as query parameters", () => {
  it("lists each partition with its low- and high-water marks in one order", () => {
    const highs = new Map([
      [2, "90"],
      [0, "40"],
    ]);
    const lows = new Map([[2, "15"]]);
    expect(windowParameters(highs, lows)).toEqual([
      [2, 0],
      ["15", "0"],
      ["90", "40"],
    ]);
  });

  it("reads a partition retention never trimmed from offset 0", () => {
    expect(windowParameters(new Map([[1, "7"]]), new Map())).toEqual([[1], ["0"], ["7"]]);
  });
});
