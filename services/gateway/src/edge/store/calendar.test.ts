import { describe, expect, it } from "vitest";
import { calendarText, dailyCalendar } from "./calendar.ts";

describe("the calendar facts of the lead-view lookup", () => {
  it("are year, month, day, and the lengths of this month and the one before", () => {
    expect(calendarText(Date.parse("2026-03-20T10:00:00Z"))).toBe("2026 3 20 31 28");
    expect(calendarText(Date.parse("2028-03-01T00:00:00Z"))).toBe("2028 3 1 31 29");
    expect(calendarText(Date.parse("2026-01-31T23:59:59.999Z"))).toBe("2026 1 31 31 31");
    expect(calendarText(Date.parse("2026-12-01T00:00:00Z"))).toBe("2026 12 1 31 30");
  });

  it("move on to the next day at UTC midnight, not before", () => {
    const calendar = dailyCalendar();
    expect(calendar(Date.parse("2026-04-30T23:59:59.999Z"))).toBe("2026 4 30 30 31");
    expect(calendar(Date.parse("2026-05-01T00:00:00Z"))).toBe("2026 5 1 31 30");
    expect(calendar(Date.parse("2026-05-01T23:00:00Z"))).toBe("2026 5 1 31 30");
  });
});
