import type { FastifyRequest } from "fastify";
import { describe, expect, it } from "vitest";
import { createAdmission, edgeContextOf } from "./admission.ts";
import { billingPeriods } from "./billing-periods.ts";
import type { Admitted } from "./key-authentication.ts";

const ADMITTED_AT = Date.parse("2026-03-20T10:00:00Z");
const PERIOD = { start: new Date("2026-03-14T00:00:00Z"), end: new Date("2026-04-14T00:00:00Z") };

function answer(leadViewsUsed: number | undefined): Admitted {
  return {
    kind: "ok",
    tenantId: "ten_1",
    memberId: "mem_1",
    keyId: "key_1",
    tier: "operator",
    status: "active",
    window: {
      limit: 600,
      count: 1,
      remaining: 599,
      resetAtMs: ADMITTED_AT + 60_000,
      allowed: true,
      retryAtMs: 0,
    },
    leadViewsPerMonth: 5_000,
    billingAnniversary: "2026-01-14",
    leadViewsUsed,
    refreshDue: false,
  };
}

describe("what the edge knows of an admitted request", () => {
  it("is the key's tenancy, the tenant's window, and the month's lead-views as of admission", () => {
    const edge = edgeContextOf(answer(1_200), ADMITTED_AT, PERIOD);
    expect(edge).toEqual({
      tenancy: { tenantId: "ten_1", memberId: "mem_1", keyId: "key_1", tier: "operator" },
      window: answer(1_200).window,
      quota: {
        limit: 5_000,
        remaining: 3_800,
        periodStart: PERIOD.start,
        resetsAt: PERIOD.end,
        admittedAt: ADMITTED_AT,
      },
    });
  });

  it("names the dashboard session when a member signed in rather than a key", () => {
    expect(edgeContextOf(answer(0), ADMITTED_AT, PERIOD, "ses_1").tenancy?.sessionId).toBe("ses_1");
    expect(edgeContextOf(answer(0), ADMITTED_AT, PERIOD).tenancy).not.toHaveProperty("sessionId");
  });

  it("leaves the remaining lead-views unknown without a counter, and never below zero", () => {
    expect(edgeContextOf(answer(undefined), ADMITTED_AT, PERIOD).quota).not.toHaveProperty(
      "remaining",
    );
    expect(edgeContextOf(answer(5_004), ADMITTED_AT, PERIOD).quota?.remaining).toBe(0);
  });
});

describe("a suspended tenant at admission", () => {
  const admit = createAdmission(
    { upgradeUrl: "https://terminal.house/pricing" },
    () => ADMITTED_AT,
    billingPeriods(),
  );
  const suspended = { ...answer(0), status: "suspended" };

  it("is refused a route that costs lead-views with 402 payment_required, before the route runs", () => {
    const request = {} as FastifyRequest;
    expect(() => admit(request, suspended, { leadViews: true })).toThrow(
      expect.objectContaining({ code: "payment_required" }),
    );
    expect(request.edge?.tenancy?.suspended).toBe(true);
  });

  it("is admitted to free routes, its billing included, and an active tenant to paid ones", () => {
    expect(() => admit({} as FastifyRequest, suspended, {})).not.toThrow();
    const active = {} as FastifyRequest;
    expect(() => admit(active, answer(0), { leadViews: true })).not.toThrow();
    expect(active.edge?.tenancy).not.toHaveProperty("suspended");
  });
});
