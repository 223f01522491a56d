import { describe, expect, it } from "vitest";
import {
  leadViewExpiry,
  leadViewHorizon,
  monthsOf,
  voidWindowExpiry,
  voidWindowStart,
} from "./retention.ts";

const at = (iso: string) => new Date(iso);
const DAY_MS = 86_400_000;

describe("the ledger's retention dates (decision 0393)", () => {
  it("keeps the month of the instant 400 days ago and every later one", () => {
    // 2028-07-05T12:00Z less 400 days (2028 has a 29 February) is 2027-06-01T12:00Z.
    expect(leadViewHorizon(at("2028-07-05T12:00:00Z"), 400).toISOString()).toBe(
      "2027-06-01T00:00:00.000Z",
    );
    expect(leadViewHorizon(at("2028-07-04T23:59:59Z"), 400).toISOString()).toBe(
      "2027-05-01T00:00:00.000Z",
    );
    expect(leadViewHorizon(at("2027-01-15T00:00:00Z"), 30).toISOString()).toBe(
      "2026-12-01T00:00:00.000Z",
    );
  });

  it("never removes a lead-view before it is 400 days old, nor later than its month allows", () => {
    for (const day of ["2027-05-01", "2027-05-17", "2027-05-31", "2028-02-29", "2027-12-31"]) {
      const expiry = leadViewExpiry(day, 400);
      const start = Date.parse(`${day}T00:00:00Z`);
      // The day's last instant is 400 days old by then, and no more than a month later.
      expect(expiry.getTime() - (start + DAY_MS)).toBeGreaterThanOrEqual(400 * DAY_MS);
      expect(expiry.getTime() - start).toBeLessThanOrEqual(431 * DAY_MS);
      // At its expiry the horizon has passed the day's month; a moment before, it has not.
      expect(leadViewHorizon(expiry, 400).getTime()).toBeGreaterThan(start);
      expect(leadViewHorizon(new Date(expiry.getTime() - 1), 400).getTime()).toBeLessThanOrEqual(
        start,
      );
    }
  });

  it("keeps a day's voids and runners-up through the window and removes them the day after", () => {
    // A read at 23:59 on 2028-07-01 can be voided until 23:59 on 2028-07-08.
    expect(voidWindowStart(at("2028-07-08T23:59:59Z"), 7)).toBe("2028-07-01");
    expect(voidWindowStart(at("2028-07-09T00:00:00Z"), 7)).toBe("2028-07-02");
    expect(voidWindowExpiry("2028-07-01", 7).toISOString()).toBe("2028-07-09T00:00:00.000Z");
  });

  it("names each month of a batch's days once, in order", () => {
    expect(monthsOf(["2027-06-02", "2027-05-31", "2027-06-30", "2026-12-31"])).toEqual([
      at("2026-12-01T00:00:00Z"),
      at("2027-05-01T00:00:00Z"),
      at("2027-06-01T00:00:00Z"),
    ]);
  });
});
