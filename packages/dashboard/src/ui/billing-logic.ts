// The billing page's wording: what each change does and when, and what a payment problem means,
// kept apart from the DOM so it is tested without a browser.
import type { Schemas } from "./api.ts";
import { formatDate, formatNumber } from "./logic.ts";

export type Billing = Schemas["Billing"];
export type TierPrice = Schemas["TierPrice"];
export type Invoice = Schemas["Invoice"];

/** An amount in the smallest unit of its currency, as the processor gives it. */
export function formatCents(cents: number, currency = "usd"): string {
  return (cents / 100).toLocaleString("en-US", {
    style: "currency",
    currency: currency.toUpperCase(),
  });
}

/** A tier's limits in a sentence. */
export function limitsSentence(limits: TierPrice["limits"]): string {
  const seats = limits.seats === 1 ? "1 seat" : `${formatNumber(limits.seats)} seats`;
  const webhooks =
    limits.concurrent_webhooks === 0
      ? "no webhooks"
      : `${formatNumber(limits.concurrent_webhooks)} concurrent webhooks`;
  return `${seats}, ${formatNumber(limits.lead_views_per_month)} lead-views a month, ${formatNumber(limits.rate_per_minute)} requests a minute, ${webhooks}`;
}

/** Whether moving from one tier to another is an upgrade (a dearer tier). */
export function isUpgrade(billing: Billing, target: TierPrice["tier"]): boolean {
  const price = (tier: string) =>
    billing.tiers.find((each) => each.tier === tier)?.monthly_price_cents ?? 0;
  return price(target) > price(billing.tenant.tier);
}

/**
 * What the confirmation of a tier change says: what changes, from when, and what it costs. During
 * the trial nothing is charged and the first charge is at the new price; afterwards the processor
 * prorates the rest of the month onto the next invoice.
 */
export function tierChangeSummary(billing: Billing, target: TierPrice): string[] {
  const { tenant } = billing;
  const upgrade = isUpgrade(billing, target.tier);
  const monthly = formatCents(target.monthly_price_cents);
  const lines = [
    `${upgrade ? "Upgrade" : "Downgrade"} to ${target.label}: ${limitsSentence(target.limits)}.`,
    upgrade
      ? "The new limits apply at once: your keys and this dashboard see them within seconds."
      : "The lower limits apply at once: reads past the new monthly lead-views answer 402 until the quota resets.",
  ];
  if (tenant.status === "trialing") {
    lines.push(
      `You are in your trial: nothing is charged now. The first charge, on ${formatDate(tenant.trial_ends_at)}, is at ${target.label}'s ${monthly} a month, for the rest of your first month.`,
    );
  } else {
    const next = formatDate(tenant.next_charge_at);
    lines.push(
      upgrade
        ? `The difference for the rest of this month is added to your next invoice, on ${next}; then ${monthly} each month.`
        : `A credit for the rest of this month goes to your next invoice, on ${next}; then ${monthly} each month.`,
    );
  }
  return lines;
}

/** What the confirmation of a cancellation says. */
export function cancelSummary(billing: Billing): string[] {
  if (billing.tenant.status === "trialing") {
    return [
      "Your trial ends at once: every API key stops working and the dashboard closes.",
      "Nothing has been charged and nothing ever will be.",
    ];
  }
  return [
    "Your subscription ends at once: every API key stops working and the dashboard closes.",
    "No further charge is made; the month already paid is not refunded.",
  ];
}

/** The subscription's state in a few words. */
export function statusText(billing: Billing, now: Date): string {
  const { tenant } = billing;
  if (tenant.status === "cancelled") {
    return "Cancelled";
  }
  if (tenant.status === "trialing") {
    const days = Math.max(
      0,
      Math.ceil((Date.parse(tenant.trial_ends_at) - now.getTime()) / 86_400_000),
    );
    return `Trial, ${days} day${days === 1 ? "" : "s"} left`;
  }
  if (tenant.standing === "suspended") {
    return "Suspended: payment overdue";
  }
  return tenant.standing === "past_due" ? "Active, payment overdue" : "Active";
}

/** When the monthly quota resets: the billing anniversary's day of each month. */
export function resetDay(anniversary: string): string {
  const day = Number(anniversary.slice(8, 10));
  const suffix =
    day % 10 === 1 && day !== 11
      ? "st"
      : day % 10 === 2 && day !== 12
        ? "nd"
        : day % 10 === 3 && day !== 13
          ? "rd"
          : "th";
  return `the ${day}${suffix} of each month (the shorter months' last day)`;
}

/** What a payment problem means and what to do, or null when payments are in order. */
export function standingNotice(billing: Billing): string | null {
  const { tenant } = billing;
  if (tenant.status === "cancelled" || tenant.standing === "good") {
    return null;
  }
  if (tenant.standing === "suspended") {
    return "Reads are suspended: a payment failed and its grace period has ended. Pay the open invoice below (or change the card there); reads resume as soon as the payment succeeds. Watchlists, webhook settings and this page keep working.";
  }
  return `A payment failed. Reads go on until ${formatDate(billing.grace_ends_at)}; pay the open invoice below before then, or reads that cost lead-views are suspended.`;
}
