// The dashboard's billing page in Debian's Chromium, driven by playwright-core, on a stack whose
// keys service bills through the Stripe provider pointed at a local server that answers
// Stripe's documented calls. Stripe's webhooks reach the gateway's public endpoint signed with
// the SDK's helper. Screenshots land in test/artifacts/dashboard/.
import { join } from "node:path";
import type { SignedEvent, StripeFake } from "@th/keys/testing/stripe";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium.ts";
import type { EdgeStack } from "./support/edge-stack.ts";
import {
  SHOTS,
  type StripeBrowserStack,
  startStripeBrowserStack,
} from "./support/stripe-browser.ts";

const PASSWORD = "a long billing passphrase";
const WEBHOOK_SECRET = "whsec_browser_billing";
const DAY = 86_400_000;

// The card processor's clock (and the keys service's): days pass for billing while the browser,
// the gateway and the session live in real time.
let clock = Date.now();
let browser: StripeBrowserStack;
let stack: EdgeStack;
let fake: StripeFake;
let page: Page;
let origin: string;
let tenantId: string;
let subscriptionRef: string;

async function shot(name: string) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

async function deliver(events: SignedEvent[]) {
  for (const event of events) {
    const answer = await stack.request("POST", "/v1/public/billing/stripe-events", {
      ip: "203.0.113.200",
      headers: { "content-type": "application/json", "stripe-signature": event.signature },
      body: event.payload,
    });
    expect(answer.statusCode).toBe(200);
  }
}

async function openBilling() {
  await page
    .getByRole("navigation", { name: "Dashboard" })
    .getByRole("link", { name: "Billing" })
    .click();
  await page.getByRole("heading", { name: "Billing", level: 1 }).waitFor();
  await page.getByTestId("billing-facts").waitFor();
}

describe.skipIf(!hasChromium)("the billing page in Chromium", () => {
  beforeAll(async () => {
    browser = await startStripeBrowserStack({
      name: "billing",
      webhookSecret: WEBHOOK_SECRET,
      now: () => new Date(clock),
      viewportWidth: 1360,
    });
    ({ stack, fake, page, origin } = browser);

    fake.addCard("pm_browser_card", {
      fingerprint: "fp_browser",
      brand: "mastercard",
      last4: "4444",
      behaviour: "charge_fails",
    });
    const trial = await stack.request("POST", "/v1/public/trials", {
      ip: "198.51.100.201",
      body: {
        tier: "starter",
        company: "Billing Realty",
        admin_email: "owner@billing-realty.test",
        payment_method: "pm_browser_card",
        admin_password: PASSWORD,
      },
    });
    expect(trial.statusCode).toBe(201);
    tenantId = trial.json().tenant.id;
    const { rows } = await stack.harness.db
      .poolFor("keys")
      .query("SELECT payment_subscription_ref FROM tenants WHERE id = $1", [tenantId]);
    subscriptionRef = rows[0].payment_subscription_ref;

    await page.goto(`${origin}/`);
    await page.getByLabel("Email").fill("owner@billing-realty.test");
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  it("shows the tier and its limits, the trial's end, the next charge date and the card", async () => {
    await openBilling();
    const facts = page.getByTestId("billing-facts");
    await facts.getByText("Trial, 14 days left").waitFor();
    const trialEnd = new Date(clock + 14 * DAY).toLocaleDateString("en-US", {
      year: "numeric",
      month: "short",
      day: "numeric",
      timeZone: "UTC",
    });
    expect(await page.getByTestId("next-charge").textContent()).toBe(trialEnd);
    expect(await page.getByTestId("card").textContent()).toBe("mastercard ending 4444");
    expect(await facts.textContent()).toContain("Starter");
    await page.getByText("No invoices yet").waitFor();
    await shot("20-billing-trial");
  });

  it("upgrades only after a confirmation that says what changes and when, and a kept plan changes nothing", async () => {
    await page.getByRole("button", { name: "Upgrade to Team" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText("Upgrade from Starter to Team?").waitFor();
    expect(await dialog.textContent()).toContain("nothing is charged now");
    await shot("21-billing-upgrade-confirmation");
    const before = fake.requests.length;
    await dialog.getByRole("button", { name: "Keep Starter" }).click();
    await dialog.waitFor({ state: "detached" });
    expect(fake.requests.length).toBe(before);

    await page.getByRole("button", { name: "Upgrade to Team" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Upgrade to Team" }).click();
    await page.getByText("Moved to Team; the new limits apply within seconds.").waitFor();
    await expect.poll(() => page.getByTestId("billing-facts").textContent()).toContain("5,000");
    const price = fake.subscriptions.get(subscriptionRef)?.items.data[0]?.price as { id: string };
    expect(price.id).toBe("price_team");
    await page.getByRole("button", { name: "Downgrade to Starter" }).waitFor();
  });

  it("lists the invoices with links to Stripe's hosted pages, and says when a failed payment suspends reads and when paying restores them", async () => {
    clock += 14 * DAY;
    await deliver(fake.advance(subscriptionRef));
    await page.reload();
    await page.getByTestId("billing-facts").waitFor();
    await page
      .getByTestId("standing-notice")
      .getByText(/A payment failed\. Reads go on until/)
      .waitFor();
    const pay = page.getByRole("link", { name: "Pay invoice" });
    expect(await pay.getAttribute("href")).toMatch(/^https:\/\/invoice\.stripe\.fake\//);
    expect(await pay.getAttribute("target")).toBe("_blank");

    clock += 7 * DAY;
    expect(await stack.keys.accounts.suspendLapsedGrace()).toContain(tenantId);
    await page.reload();
    await page
      .getByTestId("standing-notice")
      .getByText(/Reads are suspended/)
      .waitFor();
    await shot("22-billing-suspended");

    await deliver(fake.payOpenInvoices(subscriptionRef));
    await page.reload();
    await page.getByTestId("billing-facts").getByText("Active", { exact: true }).waitFor();
    expect(await page.getByTestId("standing-notice").count()).toBe(0);
    await page.getByRole("link", { name: "View invoice" }).waitFor();
    await shot("23-billing-paid");
  });

  it("cancels only after a confirmation, at Stripe, and the dashboard closes", async () => {
    await page.getByRole("button", { name: "Cancel…" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText("Cancel the subscription?").waitFor();
    expect(await dialog.textContent()).toContain("No further charge is made");
    await shot("24-billing-cancel-confirmation");
    await dialog.getByRole("button", { name: "Cancel now" }).click();
    await expect.poll(() => fake.subscriptions.get(subscriptionRef)?.status).toBe("canceled");
    await page.getByRole("heading", { name: "Sign in to your dashboard" }).waitFor();
  });
});
