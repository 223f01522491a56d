import { describe, expect, it } from "vitest";
import {
  horizonsAt,
  MONTH_DEADLINE_MS,
  MONTH_DUE_MS,
  monthStage,
  monthsToSweep,
  overdueBefore,
  PARKED_KEEP_MS,
  pastDeadlineMs,
} from "./retention.ts";

const DAY = 86_400_000;
const january = {
  name: "deliveries_p202701",
  from: new Date("2027-01-01Z"),
  to: new Date("2027-02-01Z"),
};
const february = {
  name: "deliveries_p202702",
  from: new Date("2027-02-01Z"),
  to: new Date("2027-03-01Z"),
};
const first = { name: "deliveries_p202612", from: null, to: new Date("2027-01-01Z") };
const at = (month: { to: Date }, ms: number) => new Date(month.to.getTime() + ms);

describe("retention's months", () => {
  it("leaves a month alone for 30 days after it ends, drops it then, thins it after 62", () => {
    expect(monthStage(january, at(january, MONTH_DUE_MS - 1))).toBe("young");
    expect(monthStage(january, at(january, MONTH_DUE_MS))).toBe("due");
    expect(monthStage(january, at(january, MONTH_DEADLINE_MS - 1))).toBe("due");
    expect(monthStage(january, at(january, MONTH_DEADLINE_MS))).toBe("overdue");
    expect(MONTH_DEADLINE_MS).toBe(62 * DAY);
    expect(monthStage({ name: "x", from: january.to, to: null }, at(january, 1000 * DAY))).toBe(
      "young",
    );
  });

  it("sweeps the older months and thins what was created before the newest overdue one ends", () => {
    const now = at(january, MONTH_DEADLINE_MS + DAY);
    expect(monthsToSweep([first, january, february], now).map((m) => m.name)).toEqual([
      first.name,
      january.name,
      february.name,
    ]);
    expect(overdueBefore([first, january, february], now)).toEqual(january.to);
    expect(overdueBefore([february], now)).toBeNull();
    expect(pastDeadlineMs(january, now)).toBe(DAY);
    expect(pastDeadlineMs(february, now)).toBeLessThan(0);
  });

  it("keeps a dead letter a day past its hold and a parked delivery 32 days", () => {
    const now = new Date("2027-05-10T12:00:00Z");
    const horizons = horizonsAt(now);
    expect(horizons.completeHeldUntil).toEqual(now);
    expect(now.getTime() - horizons.deadLetterHeldUntil.getTime()).toBe(DAY);
    expect(now.getTime() - horizons.parkedCreatedBefore.getTime()).toBe(PARKED_KEEP_MS);
    expect(PARKED_KEEP_MS).toBe(32 * DAY);
  });
});
