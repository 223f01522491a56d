import { describe, expect, it } from "vitest";
import { firstMonthCharge, trialEndsAt } from "./trials.ts";

describe("trials", () => {
  it("end fourteen days after they start", () => {
    expect(trialEndsAt(new Date("2026-02-20T08:00:00.000Z")).toISOString()).toBe(
      "2026-03-06T08:00:00.000Z",
    );
  });

  it("charge, once per trial end, the share of the month from the trial's end to the first paid anniversary", () => {
    const activated = new Date("2026-03-01T08:00:00.000Z");
    const ends = trialEndsAt(activated);
    // 15 Mar 08:00 to 1 Apr 00:00 is 16 days 16 hours of March's 31 days.
    const share = (16 * 24 + 16) / (31 * 24);
    expect(
      firstMonthCharge({
        id: "ten_1",
        tier: "operator",
        activated_at: activated,
        trial_ends_at: ends,
      }),
    ).toEqual({
      amountCents: Math.round(14_900 * share),
      periodStart: ends,
      idempotencyKey: "ten_1:2026-03-15T08:00:00.000Z",
    });
  });
});
