import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { Billing } from "../billing-logic.ts";
import { Confirmation, InvoiceRows, PlanFacts } from "./billing.tsx";

function billingOf(): Billing {
  return {
    tenant: {
      id: "ten_1",
      company: "Acme",
      tier: "starter",
      status: "trialing",
      seats: 1,
      lead_views_per_month: 500,
      rate_per_minute: 300,
      concurrent_webhooks: 0,
      trial_ends_at: "2026-11-16T10:00:00.000Z",
      billing_anniversary: "2026-11-02",
      card: { brand: "visa", last4: "4242" },
      standing: "good",
      next_charge_at: "2026-11-16T10:00:00.000Z",
    },
    grace_ends_at: null,
    invoices: [],
    tiers: [],
  };
}

describe("the billing page", () => {
  it("shows the tier and its limits, the trial's end, the next charge date and the card", () => {
    const html = renderToStaticMarkup(
      <PlanFacts billing={billingOf()} now={new Date("2026-11-03T10:00:00.000Z")} />,
    );
    for (const text of [
      "Starter",
      "Trial, 13 days left",
      "500",
      "300",
      "Trial ends",
      "Nov 16, 2026",
      "visa ending 4242",
      "the 2nd of each month",
    ]) {
      expect(html).toContain(text);
    }
  });

  it("links each invoice to the processor's hosted page, opened apart from the dashboard", () => {
    const html = renderToStaticMarkup(
      <InvoiceRows
        invoices={[
          {
            id: "in_1",
            number: "FAKE-0001",
            status: "open",
            amount_due_cents: 21_280,
            amount_paid_cents: 0,
            currency: "usd",
            created_at: "2026-11-16T10:00:00.000Z",
            period_start: "2026-11-16T10:00:00.000Z",
            period_end: "2026-12-02T00:00:00.000Z",
            hosted_invoice_url: "https://invoice.stripe.com/i/acct_1/test_1",
          },
        ]}
      />,
    );
    expect(html).toContain('href="https://invoice.stripe.com/i/acct_1/test_1"');
    expect(html).toContain('rel="noopener noreferrer"');
    expect(html).toContain("Pay invoice");
    expect(html).toContain("$212.80");
  });

  it("says when the invoices cannot be loaded, and when there are none yet", () => {
    expect(renderToStaticMarkup(<InvoiceRows invoices={null} />)).toContain("cannot be loaded");
    expect(renderToStaticMarkup(<InvoiceRows invoices={[]} />)).toContain("No invoices yet");
  });

  it("asks for confirmation with what changes and when, and a way to keep the plan", () => {
    const html = renderToStaticMarkup(
      <Confirmation
        title="Upgrade from Starter to Team?"
        lines={["The new limits apply at once."]}
        confirm="Upgrade to Team"
        keep="Keep Starter"
        onConfirm={() => {}}
        onKeep={() => {}}
      />,
    );
    expect(html).toContain('role="dialog"');
    expect(html).toContain("The new limits apply at once.");
    expect(html).toContain("Keep Starter");
  });
});
