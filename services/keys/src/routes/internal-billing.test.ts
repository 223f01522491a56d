// The Stripe provider against a local server that answers Stripe's documented calls: each path
// of a trial and a subscription, every request asserted with its idempotency key, and webhooks
// signed with the SDK's own test-header helper.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { contracts } from "@th/contracts";
import { INTERNAL_HEADERS } from "@th/service-kit";
import { createTestHarness, signedInject, type TestHarness } from "@th/service-kit/testing";
import Stripe from "stripe";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { buildApp } from "../app.ts";
import { StripePaymentProvider } from "../clients/stripe-payments.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import {
  FAKE_PRICE_AMOUNTS,
  FAKE_PRICE_IDS,
  type SignedEvent,
  type StripeFake,
  startStripeFake,
} from "../testing/stripe-fake.ts";
import { STRIPE_EVENTS_PATH } from "./internal-billing.ts";

const DAY = 86_400_000;
const SECRET_KEY = "sk_test_terminalhouse";
const WEBHOOK_SECRET = "whsec_terminalhouse";

let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;
let fake: StripeFake;
let clock = new Date("2026-11-02T10:00:00.000Z");
let cards = 0;

beforeAll(async () => {
  fake = await startStripeFake({
    webhookSecret: WEBHOOK_SECRET,
    prices: FAKE_PRICE_AMOUNTS,
    now: () => clock,
  });
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [migrations],
    topics: [contracts.tenantChanged, contracts.keyIssued, contracts.keyRevoked],
  });
  const payments = new StripePaymentProvider({
    secretKey: SECRET_KEY,
    webhookSigningSecret: WEBHOOK_SECRET,
    prices: FAKE_PRICE_IDS,
    timeoutMs: 2_000,
    api: fake.api,
  });
  app = await buildApp(harness, { payments, now: () => clock });
});
afterAll(async () => {
  await app.http?.close();
  await app.stop();
  await harness.close();
  await fake.close();
});
beforeEach(() => {
  clock = new Date("2026-11-02T10:00:00.000Z");
});

async function call(
  method: "GET" | "POST",
  url: string,
  headers: Record<string, string>,
  body?: object,
) {
  if (!app.http) {
    throw new Error("no http app");
  }
  return app.http.inject(signedInject(app.http, "keys", { method, url, headers, body }));
}

/** A card as Stripe's card element would have tokenised it. */
function card(behaviour: "ok" | "declined" | "requires_action" | "charge_fails" = "ok") {
  cards++;
  const id = `pm_fake_${cards}`;
  fake.addCard(id, { fingerprint: `fp_${cards}`, brand: "visa", last4: "4242", behaviour });
  return id;
}

async function startTrial(paymentMethod: string, tier = "team") {
  return call(
    "POST",
    "/internal/v1/trials",
    {},
    {
      tier,
      company: "Acme Realty",
      admin_email: `owner-${paymentMethod}@acme.test`,
      payment_method: paymentMethod,
    },
  );
}

function as(trial: { tenant: { id: string }; member: { id: string } }) {
  return {
    [INTERNAL_HEADERS.tenant]: trial.tenant.id,
    [INTERNAL_HEADERS.member]: trial.member.id,
    [INTERNAL_HEADERS.key]: "key_test",
  };
}

/** A webhook delivery as the gateway relays it: the raw body and the Stripe-Signature header. */
function deliver(event: SignedEvent) {
  return call(
    "POST",
    STRIPE_EVENTS_PATH,
    {},
    {
      payload: event.payload,
      signature: event.signature,
    },
  );
}

async function tenantRow(id: string) {
  const { rows } = await harness.pool.query(
    "SELECT status, standing, past_due_since, next_charge_at, revision, payment_subscription_ref FROM tenants WHERE id = $1",
    [id],
  );
  return rows[0];
}

/** A trial started with a new card, and its Stripe subscription's id. */
async function started(behaviour?: "ok" | "charge_fails") {
  const response = await startTrial(card(behaviour));
  expect(response.statusCode).toBe(201);
  const trial = response.json();
  const ref: string = (await tenantRow(trial.tenant.id)).payment_subscription_ref;
  return { ...trial, ref };
}

describe("a trial on Stripe", () => {
  it("reads the card, creates the customer, confirms the card with a SetupIntent and subscribes on the tier's Price trialing 14 days, each create with its own idempotency key", async () => {
    const from = fake.requests.length;
    const pm = card();
    const response = await startTrial(pm);
    expect(response.statusCode).toBe(201);
    const trial = response.json();
    const tenantId = trial.tenant.id;
    const calls = fake.since(from);
    expect(calls.map((each) => `${each.method} ${each.path}`)).toEqual([
      `GET /v1/payment_methods/${pm}`,
      "POST /v1/customers",
      "POST /v1/setup_intents",
      "POST /v1/subscriptions",
    ]);
    expect(calls.map((each) => each.idempotencyKey)).toEqual([
      undefined,
      `trial-${tenantId}-customer`,
      `trial-${tenantId}-setup-intent`,
      `trial-${tenantId}-subscription`,
    ]);
    for (const each of calls) {
      expect(each.authorization).toBe(`Bearer ${SECRET_KEY}`);
      expect(each.stripeVersion).toBe(Stripe.API_VERSION);
    }
    const customer = [...fake.customers.values()].at(-1);
    expect(calls[1]?.params).toEqual({
      email: `owner-${pm}@acme.test`,
      name: "Acme Realty",
      metadata: { tenant_id: tenantId },
    });
    expect(calls[2]?.params).toEqual({
      customer: customer?.id,
      payment_method: pm,
      allowed_payment_method_types: ["card"],
      usage: "off_session",
      confirm: "true",
      metadata: { tenant_id: tenantId },
    });
    const trialEnd = Math.floor((clock.getTime() + 14 * DAY) / 1000);
    expect(calls[3]?.params).toEqual({
      customer: customer?.id,
      items: [{ price: "price_team" }],
      default_payment_method: pm,
      trial_end: String(trialEnd),
      // The first paid anniversary: 2 December, the day the quota resets.
      billing_cycle_anchor: String(Date.parse("2026-12-02T00:00:00.000Z") / 1000),
      proration_behavior: "create_prorations",
      off_session: "true",
      metadata: { tenant_id: tenantId },
    });
    expect(trial.tenant).toMatchObject({
      status: "trialing",
      standing: "good",
      card: { brand: "visa", last4: "4242" },
      next_charge_at: new Date(trialEnd * 1000).toISOString(),
    });
    // The first key comes with the confirmed card.
    expect(trial.api_key.secret).toMatch(/^th_live_/);
    expect(
      [...fake.invoices.values()].filter((invoice) => invoice.customer === customer?.id),
    ).toEqual([]);
  });

  it("is refused with 409 for a card that started a trial already, before anything is created at Stripe", async () => {
    const pm = card();
    expect((await startTrial(pm)).statusCode).toBe(201);
    // The same card tokenised again: another PaymentMethod id, the same fingerprint.
    const again = `${pm}_again`;
    fake.addCard(again, { fingerprint: `fp_${cards}`, brand: "visa", last4: "4242" });
    const customers = fake.customers.size;
    const from = fake.requests.length;
    const refused = await startTrial(again, "custom");
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({
      error: "conflict",
      detail: expect.stringContaining("already started a trial"),
    });
    expect(fake.since(from).map((each) => `${each.method} ${each.path}`)).toEqual([
      `GET /v1/payment_methods/${again}`,
    ]);
    expect(fake.customers.size).toBe(customers);
  });

  it("lets only one of two sign-ups racing with one card through", async () => {
    const pm = card();
    const twin = `${pm}_twin`;
    fake.addCard(twin, { fingerprint: `fp_${cards}`, brand: "visa", last4: "4242" });
    const answers = await Promise.all([startTrial(pm), startTrial(twin)]);
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([201, 409]);
  });

  it("creates nothing for a declined card and answers 402, and the card may be tried again once it works", async () => {
    const pm = card("declined");
    const { rows: before } = await harness.pool.query("SELECT count(*)::int AS n FROM tenants");
    const refused = await startTrial(pm);
    expect(refused.statusCode).toBe(402);
    expect(refused.json()).toMatchObject({ error: "payment_declined" });
    const { rows: after } = await harness.pool.query("SELECT count(*)::int AS n FROM tenants");
    expect(after[0].n).toBe(before[0].n);
    fake.addCard(pm, { fingerprint: `fp_${cards}`, brand: "visa", last4: "4242" });
    expect((await startTrial(pm)).statusCode).toBe(201);
  });

  it("leaves a card that asks for 3-D Secure to the browser: 202 with the client secret and no key (internal-trial-authentication.test.ts)", async () => {
    const pending = await startTrial(card("requires_action"));
    expect(pending.statusCode).toBe(202);
    expect(pending.json()).not.toHaveProperty("api_key");
  });

  it("answers 503 when Stripe is down, creates nothing and keeps the card free for a retry", async () => {
    const pm = card();
    fake.setOutage(503);
    try {
      const down = await startTrial(pm);
      expect(down.statusCode).toBe(503);
      expect(down.json().error).toBe("unavailable");
    } finally {
      fake.setOutage(null);
    }
    expect((await startTrial(pm)).statusCode).toBe(201);
  });
});

describe("the subscription on Stripe", () => {
  it("charges a trial at day 14, not before: the prorated first period is paid and the tenant becomes active", async () => {
    const trial = await started();
    clock = new Date(clock.getTime() + 14 * DAY - 1000);
    expect(fake.advance(trial.ref)).toEqual([]);
    clock = new Date(clock.getTime() + 1000);
    const events = fake.advance(trial.ref);
    expect(events.map((event) => event.type)).toEqual([
      "invoice.paid",
      "customer.subscription.updated",
    ]);
    const [invoice] = [...fake.invoices.values()].filter(
      (each) => each.customer === [...fake.customers.values()].at(-1)?.id,
    );
    // 16 Nov 10:00 to 2 Dec 00:00 of November's 30 days, at Team's 399.00.
    expect(invoice).toMatchObject({
      status: "paid",
      amount_paid: Math.round((39_900 * (15 * 24 + 14)) / (30 * 24)),
    });
    for (const event of events) {
      expect((await deliver(event)).json()).toEqual({ received: true, outcome: "applied" });
    }
    expect(await tenantRow(trial.tenant.id)).toMatchObject({
      status: "active",
      standing: "good",
      next_charge_at: new Date("2026-12-02T00:00:00.000Z"),
    });
  });

  it("cancels a trial before day 14 at Stripe, with its idempotency key, and nothing is ever charged", async () => {
    const trial = await started();
    const { ref } = trial;
    clock = new Date(clock.getTime() + 3 * DAY);
    const from = fake.requests.length;
    const cancelled = await call("POST", "/internal/v1/tenant/cancel", as(trial));
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.json()).toMatchObject({ status: "cancelled", next_charge_at: null });
    expect(fake.since(from)).toMatchObject([
      {
        method: "DELETE",
        path: `/v1/subscriptions/${ref}`,
        idempotencyKey: `cancel-${trial.tenant.id}`,
        params: { invoice_now: "false", prorate: "false" },
      },
    ]);
    clock = new Date(clock.getTime() + 60 * DAY);
    fake.advance(trial.ref);
    const customer = fake.subscriptions.get(ref)?.customer;
    expect([...fake.invoices.values()].filter((invoice) => invoice.customer === customer)).toEqual(
      [],
    );
    // Stripe's own word of the cancellation changes nothing more.
    const ended = fake.signedEvent("customer.subscription.deleted", {
      ...fake.subscriptions.get(ref),
    });
    const revision = (await tenantRow(trial.tenant.id)).revision;
    expect((await deliver(ended)).json().outcome).toBe("applied");
    expect((await tenantRow(trial.tenant.id)).revision).toBe(revision);
  });

  it("moves the Subscription's item to the new tier's Price, keyed by tenant, revision and tier", async () => {
    const trial = await started();
    const { ref } = trial;
    const { revision } = await tenantRow(trial.tenant.id);
    const item = fake.subscriptions.get(ref)?.items.data[0]?.id;
    const from = fake.requests.length;
    const moved = await call("POST", "/internal/v1/tenant/tier", as(trial), { tier: "custom" });
    expect(moved.statusCode).toBe(200);
    expect(fake.since(from)).toMatchObject([
      { method: "GET", path: `/v1/subscriptions/${ref}`, idempotencyKey: undefined },
      {
        method: "POST",
        path: `/v1/subscriptions/${ref}`,
        idempotencyKey: `tier-${trial.tenant.id}-r${revision}-custom`,
        params: {
          items: [{ id: item, price: "price_custom" }],
          proration_behavior: "create_prorations",
        },
      },
    ]);
    const price = fake.subscriptions.get(ref)?.items.data[0]?.price as { id: string } | undefined;
    expect(price?.id).toBe("price_custom");
  });

  it("on a failed payment: past due with reads going on, suspended when the grace runs out, good again at once when paid", async () => {
    const trial = await started("charge_fails");
    const id = trial.tenant.id;
    const { ref } = trial;
    clock = new Date(clock.getTime() + 14 * DAY);
    const failedAt = clock;
    for (const event of fake.advance(trial.ref)) {
      await deliver(event);
    }
    expect(await tenantRow(id)).toMatchObject({
      status: "active",
      standing: "past_due",
      past_due_since: failedAt,
    });
    const billing = await call("GET", "/internal/v1/tenant/billing", as(trial));
    expect(billing.json().grace_ends_at).toBe(new Date(failedAt.getTime() + 7 * DAY).toISOString());

    clock = new Date(failedAt.getTime() + 7 * DAY - 1000);
    expect(await app.accounts.suspendLapsedGrace()).not.toContain(id);
    clock = new Date(failedAt.getTime() + 7 * DAY);
    expect(await app.accounts.suspendLapsedGrace()).toContain(id);
    expect(await app.accounts.suspendLapsedGrace()).not.toContain(id);
    const suspended = await tenantRow(id);
    expect(suspended.standing).toBe("suspended");

    clock = new Date(clock.getTime() + 2 * DAY);
    for (const event of fake.payOpenInvoices(ref)) {
      await deliver(event);
    }
    expect(await tenantRow(id)).toMatchObject({
      status: "active",
      standing: "good",
      past_due_since: null,
    });
  });

  it("applies an event once: a replay changes nothing and does not ask Stripe again", async () => {
    const trial = await started("charge_fails");
    clock = new Date(clock.getTime() + 14 * DAY);
    const [failed] = fake.advance(trial.ref);
    if (!failed) {
      throw new Error("no event");
    }
    expect((await deliver(failed)).json().outcome).toBe("applied");
    const after = await tenantRow(trial.tenant.id);
    const from = fake.requests.length;
    clock = new Date(clock.getTime() + 60_000);
    expect((await deliver(failed)).json().outcome).toBe("duplicate");
    expect(fake.since(from)).toEqual([]);
    expect(await tenantRow(trial.tenant.id)).toEqual(after);
  });

  it("reads the state back from Stripe, so an old failure delivered after the payment leaves the tenant in good standing", async () => {
    const trial = await started("charge_fails");
    const { ref } = trial;
    clock = new Date(clock.getTime() + 14 * DAY);
    const failures = fake.advance(trial.ref);
    const paid = fake.payOpenInvoices(ref);
    for (const event of [...paid, ...failures]) {
      await deliver(event);
    }
    expect(await tenantRow(trial.tenant.id)).toMatchObject({ standing: "good", status: "active" });
  });

  it("ends the tenant when Stripe cancels the subscription itself", async () => {
    const trial = await started("charge_fails");
    const { ref } = trial;
    expect((await deliver(fake.endSubscription(ref))).json().outcome).toBe("applied");
    expect((await tenantRow(trial.tenant.id)).status).toBe("cancelled");
  });

  it("refuses a delivery whose signature does not verify, whose body was altered or whose timestamp is stale, with 401 and no change", async () => {
    const trial = await started();
    const { ref } = trial;
    const event = fake.endSubscription(ref);
    const forged = Stripe.webhooks.generateTestHeaderString({
      payload: event.payload,
      secret: "whsec_someone_else",
    });
    const altered = event.payload.replace('"canceled"', '"active"');
    const stale = { ...event };
    clock = new Date(clock.getTime() + 301_000);
    for (const [payload, signature] of [
      [event.payload, forged],
      [altered, event.signature],
      [stale.payload, stale.signature],
    ] as const) {
      const refused = await call("POST", STRIPE_EVENTS_PATH, {}, { payload, signature });
      expect(refused.statusCode).toBe(401);
      expect(refused.json().error).toBe("unauthorized");
    }
    expect((await tenantRow(trial.tenant.id)).status).toBe("trialing");
  });

  it("lists the customer's invoices with Stripe's hosted pages on the billing page", async () => {
    const trial = await started();
    clock = new Date(clock.getTime() + 14 * DAY);
    for (const event of fake.advance(trial.ref)) {
      await deliver(event);
    }
    const billing = (await call("GET", "/internal/v1/tenant/billing", as(trial))).json();
    expect(billing.tenant).toMatchObject({ tier: "team", status: "active" });
    expect(billing.invoices).toEqual([
      expect.objectContaining({
        status: "paid",
        hosted_invoice_url: expect.stringMatching(/^https:\/\/invoice\.stripe\.fake\//),
      }),
    ]);
    expect(billing.tiers.map((tier: { tier: string }) => tier.tier)).toEqual([
      "starter",
      "operator",
      "team",
      "custom",
    ]);
  });
});

describe("the payment settings", () => {
  it("refuse the built-in processor in production in one line naming PAYMENT_PROVIDER", () => {
    expect(() => readConfig({ NODE_ENV: "production", ...productionSecrets() })).toThrow(
      /^invalid configuration: PAYMENT_PROVIDER: production refuses the built-in test processor/,
    );
    expect(() =>
      readConfig({ NODE_ENV: "production", ...productionSecrets(), PAYMENT_PROVIDER: "local" }),
    ).toThrow(/PAYMENT_PROVIDER/);
  });

  it("stop a production start at once, with one line on stderr naming PAYMENT_PROVIDER, when it is left to the built-in processor", async () => {
    const main = join(import.meta.dirname, "..", "main.ts");
    const started = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [main],
        // Only what the process is given: node runs by its full path, so it needs no PATH.
        { env: { NODE_ENV: "production", ...productionSecrets() } },
        (error, _stdout, stderr) => resolve({ code: error ? (error.code as number) : 0, stderr }),
      );
    });
    expect(started.code).toBe(1);
    const lines = started.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^invalid configuration: PAYMENT_PROVIDER: production refuses/);
  });

  it("require Stripe's key, webhook secret and a Price per tier with PAYMENT_PROVIDER=stripe", () => {
    expect(() => readConfig({ PAYMENT_PROVIDER: "stripe" })).toThrow(
      /STRIPE_SECRET_KEY: required.*STRIPE_WEBHOOK_SECRET: required.*STRIPE_PRICE_STARTER: required.*STRIPE_PRICE_CUSTOM: required/,
    );
    const config = readConfig({
      NODE_ENV: "production",
      ...productionSecrets(),
      PAYMENT_PROVIDER: "stripe",
      STRIPE_SECRET_KEY: "sk_live_abc",
      STRIPE_WEBHOOK_SECRET: "whsec_abc",
      STRIPE_PRICE_STARTER: "price_a",
      STRIPE_PRICE_OPERATOR: "price_b",
      STRIPE_PRICE_TEAM: "price_c",
      STRIPE_PRICE_CUSTOM: "price_d",
    });
    expect(config.PAYMENT_PROVIDER).toBe("stripe");
  });
});

function productionSecrets() {
  return {
    KEY_PEPPER: "a".repeat(64),
    INTERNAL_CALLER_KEYS: `gateway:${"b".repeat(64)}`,
  };
}
