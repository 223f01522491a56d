import { describe, expect, it } from "vitest";
import { splitAtIsolation } from "./isolation.ts";

const at = (...offsets: number[]) => offsets.map((offset) => ({ offset: String(offset) }));

describe("splitAtIsolation", () => {
  it("hands every record alone and ends isolating when the fetch stops at the failed batch's end", () => {
    expect(splitAtIsolation(at(4, 5, 6), 7n)).toEqual({
      lone: at(4, 5, 6),
      rest: undefined,
      ends: true,
    });
  });

  it("keeps isolating when the fetch stops short of the failed batch's end", () => {
    expect(splitAtIsolation(at(4, 5), 7n)).toEqual({
      lone: at(4, 5),
      rest: undefined,
      ends: false,
    });
  });

  it("batches again the records past the failed batch's end", () => {
    expect(splitAtIsolation(at(5, 6, 7, 8), 7n)).toEqual({
      lone: at(5, 6),
      rest: at(7, 8),
      ends: true,
    });
  });

  it("ends isolating when a fetch begins past the failed batch's end", () => {
    expect(splitAtIsolation(at(9, 10), 7n)).toEqual({ lone: [], rest: at(9, 10), ends: true });
  });
});
