import { describe, expect, it } from "vitest";
import {
  type BillingState,
  billingAfter,
  billingChanged,
  firstChargeCents,
  firstPaidAnniversary,
  graceEndsAt,
  processorStatusOf,
  suspendedAfterGrace,
} from "./billing.ts";

const now = new Date("2026-05-10T12:00:00.000Z");
const trialing: BillingState = { status: "trialing", standing: "good", past_due_since: null };
const pastDue: BillingState = {
  status: "active",
  standing: "past_due",
  past_due_since: new Date("2026-05-01T00:00:00.000Z"),
};
const suspended: BillingState = { ...pastDue, standing: "suspended" };
const cancelled: BillingState = { status: "cancelled", standing: "good", past_due_since: null };

describe("billing states", () => {
  it("read Stripe's subscription statuses, any unknown one as a payment owed", () => {
    expect(
      [
        "trialing",
        "active",
        "past_due",
        "unpaid",
        "incomplete",
        "paused",
        "canceled",
        "incomplete_expired",
        "something_new",
      ].map(processorStatusOf),
    ).toEqual([
      "trialing",
      "active",
      "past_due",
      "past_due",
      "past_due",
      "past_due",
      "cancelled",
      "cancelled",
      "past_due",
    ]);
  });

  it("make a trial whose first payment is made active, in good standing", () => {
    expect(billingAfter(trialing, "active", now)).toEqual({
      status: "active",
      standing: "good",
      past_due_since: null,
    });
  });

  it("start the grace period when a payment is first owed, and keep its start afterwards", () => {
    const first = billingAfter(trialing, "past_due", now);
    expect(first).toEqual({ status: "active", standing: "past_due", past_due_since: now });
    expect(billingAfter(first, "past_due", new Date(now.getTime() + 3_600_000))).toEqual(first);
  });

  it("keep a suspension while the payment is owed, and restore good standing at once when it is made", () => {
    expect(billingAfter(suspended, "past_due", now)).toEqual(suspended);
    expect(billingAfter(suspended, "active", now)).toEqual({
      status: "active",
      standing: "good",
      past_due_since: null,
    });
  });

  it("end with the subscription, and never revive a cancelled tenant", () => {
    expect(billingAfter(pastDue, "cancelled", now).status).toBe("cancelled");
    for (const processor of ["trialing", "active", "past_due"] as const) {
      expect(billingAfter(cancelled, processor, now)).toBe(cancelled);
    }
  });

  it("tell a change from a repetition", () => {
    expect(billingChanged(pastDue, { ...pastDue })).toBe(false);
    expect(billingChanged(pastDue, suspended)).toBe(true);
    expect(billingChanged(trialing, billingAfter(trialing, "active", now))).toBe(true);
  });
});

describe("the grace period", () => {
  it("ends the setting's days after the first failed payment", () => {
    expect(graceEndsAt(new Date("2026-05-01T00:00:00.000Z"), 7).toISOString()).toBe(
      "2026-05-08T00:00:00.000Z",
    );
  });

  it("suspends a past-due tenant at its end and not a moment before", () => {
    const end = graceEndsAt(pastDue.past_due_since as Date, 7);
    expect(suspendedAfterGrace(pastDue, new Date(end.getTime() - 1), 7)).toBe(false);
    expect(suspendedAfterGrace(pastDue, end, 7)).toBe(true);
    expect(suspendedAfterGrace(trialing, end, 7)).toBe(false);
    expect(suspendedAfterGrace(suspended, end, 7)).toBe(false);
    expect(suspendedAfterGrace({ ...pastDue, status: "cancelled" }, end, 7)).toBe(false);
  });
});

describe("the first paid anniversary", () => {
  it("is the activation's UTC day a month on, the month's last day when it is shorter", () => {
    expect(firstPaidAnniversary(new Date("2026-03-09T15:04:05.000Z")).toISOString()).toBe(
      "2026-04-09T00:00:00.000Z",
    );
    expect(firstPaidAnniversary(new Date("2026-01-31T23:00:00.000Z")).toISOString()).toBe(
      "2026-02-28T00:00:00.000Z",
    );
  });

  it("prices the charge at the trial's end as the share of that month left", () => {
    const activated = new Date("2026-04-01T00:00:00.000Z");
    const ends = new Date("2026-04-15T00:00:00.000Z");
    // 16 of April's 30 days remain after a trial that ends on the 15th.
    expect(firstChargeCents(3_000, activated, ends)).toBe(1_600);
  });
});
