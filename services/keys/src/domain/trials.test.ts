import { describe, expect, it } from "vitest";
import { firstMonthCharge, statusAfterTrial, trialEndsAt } from "./trials.ts";

describe("trials", () => {
  it("end fourteen days after they start", () => {
    expect(trialEndsAt(new Date("2026-02-20T08:00:00.000Z")).toISOString()).toBe(
      "2026-03-06T08:00:00.000Z",
    );
  });

  it("charge the tier's monthly price once per trial end, keyed by tenant and end", () => {
    const ends = new Date("2026-03-06T08:00:00.000Z");
    expect(firstMonthCharge({ id: "ten_1", tier: "operator", trial_ends_at: ends })).toEqual({
      amountCents: 14_900,
      periodStart: ends,
      idempotencyKey: "ten_1:2026-03-06T08:00:00.000Z",
    });
  });

  it("activate the tenant when the charge succeeds and cancel it when it fails", () => {
    expect(statusAfterTrial(true)).toBe("active");
    expect(statusAfterTrial(false)).toBe("cancelled");
  });
});
