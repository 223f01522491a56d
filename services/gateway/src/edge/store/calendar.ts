const DAY_MS = 86_400_000;

/**
 * The calendar facts the authorization script needs to find the month's lead-view counter:
 * "year month day days-in-month days-in-previous-month" of a time's UTC day.
 */
export function calendarText(now: number): string {
  const today = new Date(now);
  const year = today.getUTCFullYear();
  const month = today.getUTCMonth();
  return [
    year,
    month + 1,
    today.getUTCDate(),
    new Date(Date.UTC(year, month + 1, 0)).getUTCDate(),
    new Date(Date.UTC(year, month, 0)).getUTCDate(),
  ].join(" ");
}

/** The calendar facts change once a UTC day, not once a request, so the text is kept a day. */
export function dailyCalendar(): (now: number) => string {
  let calendarDay = Number.NaN;
  let calendar = "";
  return (now) => {
    const day = Math.floor(now / DAY_MS);
    if (day !== calendarDay) {
      calendar = calendarText(now);
      calendarDay = day;
    }
    return calendar;
  };
}
