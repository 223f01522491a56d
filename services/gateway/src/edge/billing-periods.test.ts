import { billingPeriodAt } from "@th/billing";
import { describe, expect, it } from "vitest";
import { billingPeriods } from "./billing-periods.ts";

const DAY_MS = 86_400_000;

describe("billing periods at the edge", () => {
  it("are the periods billingPeriodAt finds, across month ends and clamped anniversaries", () => {
    const periods = billingPeriods();
    for (const [anniversary, at] of [
      ["2026-01-31", "2026-03-20T10:00:00Z"],
      ["2026-01-31", "2026-02-28T00:00:00Z"],
      ["2025-12-14", "2026-03-13T23:59:59.999Z"],
      ["2025-12-14", "2026-03-14T00:00:00Z"],
    ] as const) {
      const expected = billingPeriodAt(new Date(`${anniversary}T00:00:00Z`), new Date(at));
      expect(periods.at(anniversary, Date.parse(at)), `${anniversary} at ${at}`).toMatchObject({
        start: expected.start,
        end: expected.end,
      });
    }
  });

  it("are computed once per anniversary and UTC day", () => {
    const periods = billingPeriods();
    const morning = Date.parse("2026-03-20T01:00:00Z");
    const first = periods.at("2026-01-14", morning);
    expect(periods.at("2026-01-14", morning + 20 * 3_600_000)).toBe(first);
    expect(periods.at("2026-01-14", morning + DAY_MS)).not.toBe(first);
  });

  it("start at the request's own time for an anniversary that is no date", () => {
    const at = Date.parse("2026-03-20T10:00:00Z");
    const expected = billingPeriodAt(new Date(at), new Date(at));
    expect(billingPeriods().at("", at)).toEqual(expected);
  });

  it("write a period end as RFC 3339 UTC", () => {
    expect(billingPeriods().iso(new Date("2026-04-14T00:00:00Z"))).toBe("2026-04-14T00:00:00.000Z");
  });
});
