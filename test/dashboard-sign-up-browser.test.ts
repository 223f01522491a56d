// The sign-up page in Debian's Chromium, driven by playwright-core, on a stack whose keys service
// bills through the Stripe provider pointed at the local server that answers Stripe's documented
// calls. Stripe.js cannot be fetched here, so the test serves a small stand-in for it at
// js.stripe.com (page.route): Stripe(key).elements().create("card").mount(), createPaymentMethod
// (a call to api.stripe.com, which the test turns into a card at the fake) and confirmCardSetup
// (a 3-D Secure frame from hooks.stripe.com, then the SetupIntent confirmed at api.stripe.com).
// The page's own code runs unchanged, under its own content policy, which the browser enforces.
import { join } from "node:path";
import { SIGN_UP_CONTENT_POLICY } from "@th/dashboard/sign-up-policy";
import type { StripeFake } from "@th/keys/testing/stripe";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasChromium } from "./support/chromium.ts";
import type { EdgeStack } from "./support/edge-stack.ts";
import {
  SHOTS,
  type StripeBrowserStack,
  startStripeBrowserStack,
} from "./support/stripe-browser.ts";

const PUBLISHABLE_KEY = "pk_test_signuppage";

/** Stripe's test card numbers: one that confirms at once, one that asks for 3-D Secure. */
const CARD_OK = "4242424242424242";
const CARD_3DS = "4000002760003184";

// The stand-in for Stripe.js: the calls the page makes, each going where Stripe's would go.
const FAKE_STRIPE_JS = `
(() => {
  const api = (path, body) =>
    fetch("https://api.stripe.com" + path, { method: "POST", body: new URLSearchParams(body) })
      .then((r) => r.json());
  function Stripe(key) {
    if (!/^pk_(test|live)_/.test(key)) throw new Error("Invalid publishable key");
    return {
      elements() {
        return {
          create(type) {
            if (type !== "card") throw new Error("only the card element");
            let input = null;
            return {
              mount(el) {
                input = document.createElement("input");
                input.setAttribute("aria-label", "Card number");
                el.appendChild(input);
              },
              destroy() { input && input.remove(); },
              _number() { return input ? input.value.replace(/\\s/g, "") : ""; },
            };
          },
        };
      },
      async createPaymentMethod(options) {
        const made = await api("/v1/payment_methods", {
          type: options.type, key, "card[number]": options.card._number(),
          "billing_details[email]": options.billing_details.email,
        });
        return made.error ? { error: made.error } : { paymentMethod: made };
      },
      async confirmCardSetup(clientSecret) {
        // The bank's challenge, in Stripe's frame; it answers by message when it has loaded.
        const frame = document.createElement("iframe");
        const done = new Promise((resolve) => {
          const timer = setTimeout(() => resolve(false), 5000);
          window.addEventListener("message", (event) => {
            if (event.origin === "https://hooks.stripe.com" && event.data === "3ds-authenticated") {
              clearTimeout(timer);
              resolve(true);
            }
          });
        });
        frame.src = "https://hooks.stripe.com/3d_secure_2/challenge?secret=" + encodeURIComponent(clientSecret);
        document.body.appendChild(frame);
        const authenticated = await done;
        frame.remove();
        if (!authenticated) {
          return { error: { type: "card_error", message: "The authentication frame did not load." } };
        }
        const id = clientSecret.split("_secret_")[0];
        const intent = await api("/v1/setup_intents/" + id + "/confirm", { client_secret: clientSecret, key });
        return intent.error ? { error: intent.error } : { setupIntent: intent };
      },
    };
  }
  Stripe.version = "endive";
  window.Stripe = Stripe;
})();
`;

const CHALLENGE_PAGE = `<!doctype html><title>3-D Secure</title><p>Authenticated</p>
<script>parent.postMessage("3ds-authenticated", "*");</script>`;

let browser: StripeBrowserStack;
let stack: EdgeStack;
let fake: StripeFake;
let page: Page;
let origin: string;
let cards = 0;
/** Every request the page sent, by URL, with its body: where the card number went, if anywhere. */
const sent: { url: string; body: string }[] = [];
/** What reached the stand-ins of Stripe's hosts. */
const stripeHits: string[] = [];

async function shot(name: string) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** Stripe's side of the browser's calls, answered from the fake's state. */
async function routeStripe(target: Page) {
  await target.route("https://js.stripe.com/**", async (route) => {
    stripeHits.push(route.request().url());
    await route.fulfill({ contentType: "text/javascript", body: FAKE_STRIPE_JS });
  });
  await target.route("https://hooks.stripe.com/**", async (route) => {
    stripeHits.push(route.request().url());
    await route.fulfill({ contentType: "text/html", body: CHALLENGE_PAGE });
  });
  await target.route("https://api.stripe.com/**", async (route) => {
    const url = new URL(route.request().url());
    stripeHits.push(url.href);
    const form = new URLSearchParams(route.request().postData() ?? "");
    const headers = { "access-control-allow-origin": "*" };
    if (url.pathname === "/v1/payment_methods") {
      cards++;
      const id = `pm_browser_${cards}`;
      const number = form.get("card[number]") ?? "";
      fake.addCard(id, {
        fingerprint: `fp_browser_${number}_${cards}`,
        brand: "visa",
        last4: number.slice(-4),
        behaviour: number === CARD_3DS ? "requires_action" : "ok",
      });
      await route.fulfill({ headers, json: { id, object: "payment_method", type: "card" } });
      return;
    }
    const confirm = /^\/v1\/setup_intents\/([^/]+)\/confirm$/.exec(url.pathname);
    if (confirm?.[1]) {
      fake.authenticate(confirm[1], "succeeded");
      await route.fulfill({ headers, json: fake.setupIntents.get(confirm[1]) });
      return;
    }
    await route.fulfill({ status: 404, headers, json: { error: { message: "unknown" } } });
  });
}

async function fillForm(company: string, email: string, cardNumber: string) {
  await page.goto(`${origin}/sign-up`);
  await page.getByRole("heading", { name: "Start a 14-day trial" }).waitFor();
  await page.getByLabel("Plan").selectOption("operator");
  await page.getByLabel("Company").fill(company);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password", { exact: true }).fill("a long sign-up passphrase");
  await page.getByLabel("Card number").fill(cardNumber);
}

async function tenantOf(email: string) {
  const { rows } = await stack.harness.db
    .poolFor("keys")
    .query(
      "SELECT t.id, t.status, t.tier, (SELECT count(*)::int FROM api_keys k WHERE k.tenant_id = t.id) AS keys FROM tenants t JOIN members m ON m.tenant_id = t.id WHERE m.email = $1",
      [email],
    );
  return rows[0] ?? null;
}

describe.skipIf(!hasChromium)("the sign-up page in Chromium", () => {
  beforeAll(async () => {
    browser = await startStripeBrowserStack({
      name: "sign-up",
      webhookSecret: "whsec_browser_sign_up",
      gatewayEnv: { STRIPE_PUBLISHABLE_KEY: PUBLISHABLE_KEY },
      viewportWidth: 1280,
    });
    ({ stack, fake, page, origin } = browser);
    page.on("request", (request) =>
      sent.push({ url: request.url(), body: request.postData() ?? "" }),
    );
    await routeStripe(page);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  it("serves the sign-up page with a policy that admits Stripe.js, its frames and its API and nothing else, while the other pages keep the dashboard's", async () => {
    const signUp = await fetch(`${origin}/sign-up`);
    const policy = signUp.headers.get("content-security-policy") ?? "";
    expect(policy).toBe(SIGN_UP_CONTENT_POLICY);
    const directives = Object.fromEntries(
      policy.split("; ").map((each) => {
        const [name = "", ...sources] = each.split(" ");
        return [name, sources];
      }),
    );
    expect(directives["script-src"]).toEqual([
      "'self'",
      "https://js.stripe.com",
      "https://*.js.stripe.com",
    ]);
    expect(directives["frame-src"]).toEqual([
      "https://js.stripe.com",
      "https://*.js.stripe.com",
      "https://hooks.stripe.com",
    ]);
    expect(directives["connect-src"]).toEqual(["'self'", "https://api.stripe.com"]);
    expect(directives["frame-ancestors"]).toEqual(["'none'"]);
    expect(policy).not.toMatch(/unsafe|\*(?!\.js\.stripe\.com)/);
    expect(signUp.headers.get("x-frame-options")).toBe("DENY");
    expect(await signUp.text()).toContain(`content="${PUBLISHABLE_KEY}"`);

    for (const other of ["/", "/sign-in", "/billing", "/keys"]) {
      const answer = await fetch(`${origin}${other}`);
      const otherPolicy = answer.headers.get("content-security-policy") ?? "";
      expect(otherPolicy, other).toMatch(/script-src 'self';/);
      expect(otherPolicy, other).not.toContain("stripe");
      expect(await answer.text(), other).not.toContain(PUBLISHABLE_KEY);
    }
  });

  it("takes the card in Stripe's card element and sends only its PaymentMethod id to the trial API; the trial is active with its first key, shown once", async () => {
    const email = "owner@plain-card.test";
    await fillForm("Plain Card Realty", email, CARD_OK);
    await shot("40-sign-up-form");
    await page.getByRole("button", { name: "Start trial" }).click();
    await page.getByRole("heading", { name: "Your trial is active" }).waitFor();
    const secret = await page.locator(".secret-value").textContent();
    expect(secret).toMatch(/^th_live_/);
    await shot("41-sign-up-active");

    const trialCalls = sent.filter((each) => each.url === `${origin}/v1/public/trials`);
    expect(trialCalls).toHaveLength(1);
    expect(JSON.parse(trialCalls[0]?.body ?? "{}")).toMatchObject({
      tier: "operator",
      admin_email: email,
      payment_method: expect.stringMatching(/^pm_browser_\d+$/),
    });
    // The card number went to Stripe only, never to our origin.
    const ours = sent.filter((each) => each.url.startsWith(origin));
    expect(ours.some((each) => each.body.includes(CARD_OK))).toBe(false);
    expect(await tenantOf(email)).toMatchObject({ status: "trialing", tier: "operator", keys: 1 });
  });

  it("authenticates a card that asks for 3-D Secure in Stripe's frame, then confirms the trial, which activates with its first key", async () => {
    const email = "owner@secure-card.test";
    await fillForm("Secure Card Realty", email, CARD_3DS);
    const hitsBefore = stripeHits.length;
    await page.getByRole("button", { name: "Start trial" }).click();
    await page.getByRole("heading", { name: "Your trial is active" }).waitFor();
    expect(await page.locator(".secret-value").textContent()).toMatch(/^th_live_/);
    await shot("42-sign-up-3ds-active");

    const hits = stripeHits.slice(hitsBefore);
    expect(hits.some((url) => url.startsWith("https://hooks.stripe.com/3d_secure_2/"))).toBe(true);
    expect(
      hits.some((url) => /api\.stripe\.com\/v1\/setup_intents\/seti_\w+\/confirm/.test(url)),
    ).toBe(true);
    const confirms = sent.filter((each) => each.url === `${origin}/v1/public/trials/confirm`);
    expect(confirms).toHaveLength(1);
    expect(JSON.parse(confirms[0]?.body ?? "{}").client_secret).toMatch(/^seti_\w+_secret_\w+$/);
    expect(await tenantOf(email)).toMatchObject({ status: "trialing", keys: 1 });
  });

  it("retries only the confirmation when it fails after Stripe authenticated the card, instead of starting over with a claimed card", async () => {
    const email = "owner@retry-card.test";
    await fillForm("Retry Card Realty", email, CARD_3DS);
    const confirmUrl = `${origin}/v1/public/trials/confirm`;
    await page.route(confirmUrl, (route) => route.abort("connectionreset"), { times: 1 });
    const before = sent.length;
    await page.getByRole("button", { name: "Start trial" }).click();
    await page.getByRole("alert").waitFor();
    await page.getByRole("button", { name: "Start trial" }).click();
    await page.getByRole("heading", { name: "Your trial is active" }).waitFor();
    const calls = sent.slice(before).map((each) => each.url);
    expect(calls.filter((url) => url === `${origin}/v1/public/trials`)).toHaveLength(1);
    expect(calls.filter((url) => url === confirmUrl)).toHaveLength(2);
    expect(await tenantOf(email)).toMatchObject({ status: "trialing", keys: 1 });
  });

  it("offers the built-in processor's test cards, and says so, when the gateway serves no publishable key; Stripe.js is never fetched", async () => {
    // The page as a gateway without STRIPE_PUBLISHABLE_KEY serves it: the same bytes and headers
    // without the key. The keys service here is on Stripe, so the fake learns the test token.
    fake.addCard("pm_card_visa", { fingerprint: "fp_local_visa", brand: "visa", last4: "4242" });
    await page.route(`${origin}/sign-up`, async (route) => {
      const served = await route.fetch();
      const body = (await served.text())
        .replace(/<meta name="stripe-publishable-key"[^>]*>/, "")
        .replace('content="stripe"', 'content="test-cards"');
      await route.fulfill({ response: served, body });
    });
    const hitsBefore = stripeHits.length;
    try {
      await page.goto(`${origin}/sign-up`);
      await page.getByRole("heading", { name: "Start a 14-day trial" }).waitFor();
      await page
        .getByText("Test mode: this server uses the built-in test card processor")
        .waitFor();
      await page.getByLabel("Company").fill("Test Card Realty");
      await page.getByLabel("Email").fill("owner@test-card.test");
      await page.getByLabel("Password", { exact: true }).fill("a long sign-up passphrase");
      await page.getByLabel("Test card").selectOption("pm_card_visa");
      await shot("43-sign-up-test-cards");
      await page.getByRole("button", { name: "Start trial" }).click();
      await page.getByRole("heading", { name: "Your trial is active" }).waitFor();
    } finally {
      await page.unroute(`${origin}/sign-up`);
    }
    expect(stripeHits.slice(hitsBefore)).toEqual([]);
    expect(await tenantOf("owner@test-card.test")).toMatchObject({ status: "trialing", keys: 1 });
  });

  it("lets the sign-up page load no script, frame or connection outside Stripe's", async () => {
    await page.goto(`${origin}/sign-up`);
    await page.getByRole("heading", { name: "Start a 14-day trial" }).waitFor();
    let reached = false;
    await page.route("https://cdn.elsewhere.test/**", async (route) => {
      reached = true;
      await route.fulfill({ contentType: "text/javascript", body: "window.evil = true;" });
    });
    const outcome = await page.evaluate(async () => {
      const script = document.createElement("script");
      script.src = "https://cdn.elsewhere.test/skim.js";
      const loaded = new Promise<string>((resolve) => {
        script.onload = () => resolve("loaded");
        script.onerror = () => resolve("refused");
      });
      document.head.appendChild(script);
      const fetched = await fetch("https://cdn.elsewhere.test/collect", { method: "POST" })
        .then(() => "sent")
        .catch(() => "refused");
      return { script: await loaded, fetched };
    });
    expect(outcome).toEqual({ script: "refused", fetched: "refused" });
    expect(reached).toBe(false);
  });
});
