import { describe, expect, it } from "vitest";
import { rateWindow } from "./rolling-minute.ts";

const OLDEST = Date.parse("2026-03-20T10:00:00.250Z");

describe("a rolling minute's answer", () => {
  it("resets a minute after its oldest kept request, with what is left of the limit", () => {
    expect(rateWindow(10, 4, OLDEST, true)).toEqual({
      limit: 10,
      count: 4,
      remaining: 6,
      resetAtMs: OLDEST + 60_000,
      allowed: true,
      retryAtMs: 0,
    });
  });

  it("names the reset as the retry time of a refused request, with nothing remaining", () => {
    expect(rateWindow(10, 11, OLDEST, false)).toMatchObject({
      remaining: 0,
      allowed: false,
      retryAtMs: OLDEST + 60_000,
    });
    expect(rateWindow(10, 10, OLDEST, true).remaining).toBe(0);
  });
});
