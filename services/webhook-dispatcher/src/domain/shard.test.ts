import { describe, expect, it } from "vitest";
import { shareOf, WHOLE } from "./shard.ts";

describe("tenant shares of dispatcher instances", () => {
  it("gives every live instance a distinct bucket of as many as there are instances", () => {
    const members = ["c", "a", "b", "a"];
    const shares = ["a", "b", "c"].map((self) => shareOf(members, self));
    expect(shares).toEqual([
      { count: 3, index: 0 },
      { count: 3, index: 1 },
      { count: 3, index: 2 },
    ]);
  });

  it("claims every tenant while the instance is not in the list", () => {
    expect(shareOf([], "a")).toEqual(WHOLE);
    expect(shareOf(["b", "c"], "a")).toEqual(WHOLE);
  });
});
