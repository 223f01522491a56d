import { describe, expect, it } from "vitest";
import type { RateWindow } from "./edge-store.ts";
import { rateLimited, retryAfterSeconds } from "./rate-limit.ts";

const NOW = Date.parse("2026-03-20T10:00:00Z");

function refused(retryAtMs: number): RateWindow {
  return { limit: 3, count: 4, remaining: 0, resetAtMs: retryAtMs, allowed: false, retryAtMs };
}

describe("the wait a refused window names", () => {
  it("rounds a part of a second up to the whole second", () => {
    expect(retryAfterSeconds(refused(NOW + 1_001), NOW)).toBe(2);
    expect(retryAfterSeconds(refused(NOW + 2_000), NOW)).toBe(2);
  });

  it("is never less than one second, even when the window has already freed a request", () => {
    expect(retryAfterSeconds(refused(NOW), NOW)).toBe(1);
    expect(retryAfterSeconds(refused(NOW - 5_000), NOW)).toBe(1);
  });
});

describe("the 429 of a refused window", () => {
  it("names who exceeded which limit, and carries the wait in its body and in Retry-After", () => {
    const error = rateLimited(refused(NOW + 12_500), NOW, "this client");
    expect(error.status).toBe(429);
    expect(error.body()).toEqual({
      error: "rate_limited",
      detail:
        "this client exceeded 3 requests per rolling minute; wait 13 s before retrying (retrying sooner extends the wait)",
      retry_after_seconds: 13,
    });
    expect(error.headers).toEqual({ "retry-after": "13" });
  });
});
