import { describe, expect, it } from "vitest";
import { wholeNumberText } from "./number-text.ts";

describe("whole-number text", () => {
  it("writes whole numbers as decimal text", () => {
    expect([0, 7, 10, 99, 100, 1_234_567, 100_000_000].map(wholeNumberText)).toEqual([
      "0",
      "7",
      "10",
      "99",
      "100",
      "1234567",
      "100000000",
    ]);
  });
});
