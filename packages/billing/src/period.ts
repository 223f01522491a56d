/**
 * Billing periods run from the activation instant, month by month. A period that would start on
 * a day the month lacks (an anniversary on the 31st in February) starts on the month's last day
 * instead, and the next one returns to the anchor day. Each start is computed from the anchor,
 * never from the previous start, so clamping never drifts.
 */
export function addMonthsClamped(anchor: Date, months: number): Date {
  const year = anchor.getUTCFullYear();
  const month = anchor.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return new Date(
    Date.UTC(
      year,
      month,
      Math.min(anchor.getUTCDate(), lastDay),
      anchor.getUTCHours(),
      anchor.getUTCMinutes(),
      anchor.getUTCSeconds(),
      anchor.getUTCMilliseconds(),
    ),
  );
}

export interface BillingPeriod {
  /** Inclusive. */
  start: Date;
  /** Exclusive; the next billing anniversary, when the monthly quota resets. */
  end: Date;
  /** 0 for the month that starts at activation. */
  index: number;
}

export function billingPeriodAt(anchor: Date, now: Date): BillingPeriod {
  const monthsApart =
    (now.getUTCFullYear() - anchor.getUTCFullYear()) * 12 +
    (now.getUTCMonth() - anchor.getUTCMonth());
  let index = Math.max(0, monthsApart - 1);
  while (addMonthsClamped(anchor, index + 1) <= now) {
    index++;
  }
  while (index > 0 && addMonthsClamped(anchor, index) > now) {
    index--;
  }
  return {
    start: addMonthsClamped(anchor, index),
    end: addMonthsClamped(anchor, index + 1),
    index,
  };
}
