import { generateApiKey } from "@th/api-keys";
import { describe, expect, it } from "vitest";
import { bodyHoldsKey } from "./body-keys.ts";

describe("Authentication 2: a key in the body is found however it is written", () => {
  const key = generateApiKey();
  it("finds it as is, with JSON escapes, and percent-encoded", () => {
    expect(bodyHoldsKey(`{"a":"${key}"}`)).toBe(true);
    expect(bodyHoldsKey(`{"a":"${key.replace("th_", "t\\u0068\\u005f")}"}`)).toBe(true);
    expect(bodyHoldsKey(`a=${key.replace("th_live_", "th%5Flive%5f")}`)).toBe(true);
  });

  it("passes a body without one", () => {
    expect(bodyHoldsKey('{"label":"th_live_ is the prefix","x":"\\u0041%41"}')).toBe(false);
  });
});
