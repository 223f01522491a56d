import { describe, expect, it } from "vitest";
import { authorizationOf } from "./authorization.ts";

describe("an authorization answer read back from the script", () => {
  it("reads an admitted caller's tenancy, window, caps and lead-views used", () => {
    const reply = [
      "ok",
      "ten_1",
      "mem_1",
      "key_1",
      "operator",
      "active",
      "600",
      "12",
      "1774000800250",
      "1",
      "5000",
      "2026-01-14",
      "1200",
      "1",
    ].join("\n");
    expect(authorizationOf(reply)).toEqual({
      kind: "ok",
      tenantId: "ten_1",
      memberId: "mem_1",
      keyId: "key_1",
      tier: "operator",
      status: "active",
      window: {
        limit: 600,
        count: 12,
        remaining: 588,
        resetAtMs: 1774000860250,
        allowed: true,
        retryAtMs: 0,
      },
      leadViewsPerMonth: 5000,
      billingAnniversary: "2026-01-14",
      leadViewsUsed: 1200,
      refreshDue: true,
    });
  });

  it("leaves the lead-views used unknown when the counter is not in Redis", () => {
    const reply = "ok\nten_1\nmem_1\nkey_1\nstarter\ntrialing\n60\n1\n1\n1\n500\n2026-01-14\n\n0";
    expect(authorizationOf(reply)).toMatchObject({ leadViewsUsed: undefined, refreshDue: false });
  });

  it("reads the refusals and an inactive tenant's status", () => {
    expect(authorizationOf("miss")).toEqual({ kind: "miss" });
    expect(authorizationOf("unknown")).toEqual({ kind: "unknown" });
    expect(authorizationOf("revoked")).toEqual({ kind: "revoked" });
    expect(authorizationOf("inactive\nten_1\ncanceled")).toEqual({
      kind: "inactive",
      tenantId: "ten_1",
      status: "canceled",
    });
  });

  it("throws on an answer of the wrong number of fields rather than misreading it", () => {
    expect(() => authorizationOf("ok\nten_1\nmem_1")).toThrow(
      "unexpected authorization answer of 3 fields",
    );
    expect(() => authorizationOf("inactive\nten_1")).toThrow();
  });
});
