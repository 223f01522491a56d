import { describe, expect, it } from "vitest";
import { formatAddress } from "./situs.ts";

describe("a situs on one line", () => {
  it("joins street, city and zip, leaving out the parts the roll left empty", () => {
    expect(formatAddress({ address: "12 MAIN ST", city: "MIAMI", zip: "33101" })).toBe(
      "12 MAIN ST, MIAMI 33101",
    );
    expect(formatAddress({ address: null, city: "MIAMI", zip: null })).toBe("MIAMI");
    expect(formatAddress({ address: "12 MAIN ST", city: null, zip: null })).toBe("12 MAIN ST");
    expect(formatAddress({ address: null, city: null, zip: null })).toBe("");
  });
});
