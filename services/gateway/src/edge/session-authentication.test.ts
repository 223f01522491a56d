import { describe, expect, it } from "vitest";
import { csrfSatisfied } from "./session-authentication.ts";

describe("the dashboard's CSRF check", () => {
  it("asks nothing of a safe method", () => {
    for (const method of ["GET", "HEAD", "OPTIONS"]) {
      expect(csrfSatisfied(method, undefined, "token-1")).toBe(true);
    }
  });

  it("lets a state-changing call through only when it echoes the session's token exactly", () => {
    expect(csrfSatisfied("POST", "token-1", "token-1")).toBe(true);
    expect(csrfSatisfied("POST", "token-2", "token-1")).toBe(false);
    expect(csrfSatisfied("DELETE", "token-10", "token-1")).toBe(false);
    expect(csrfSatisfied("PATCH", undefined, "token-1")).toBe(false);
    expect(csrfSatisfied("POST", ["token-1", "token-1"], "token-1")).toBe(false);
  });
});
