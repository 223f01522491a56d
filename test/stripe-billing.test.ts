// Billing through Stripe, end to end at the edge: the gateway, keys on the Stripe provider
// (pointed at a local server that answers Stripe's documented calls), parcels and the ledger on
// real Postgres, Redis and Kafka. Trial starts limited per address and per email domain, one
// trial per card, Stripe's webhooks at the public endpoint, a failed payment suspending paid
// reads at the edge until it is paid, an upgrade reaching the edge, and cancellation.
import { StripePaymentProvider } from "@th/keys/payments";
import {
  type CardBehaviour,
  FAKE_PRICE_AMOUNTS,
  FAKE_PRICE_IDS,
  type SignedEvent,
  type StripeFake,
  signPayload,
  startStripeFake,
} from "@th/keys/testing/stripe";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

const DAY = 86_400_000;
const WEBHOOK_SECRET = "whsec_edge_test";
const WEBHOOK = "/v1/public/billing/stripe-events";

let clock = Date.parse("2026-11-03T09:00:00.000Z");
let stack: EdgeStack;
let fake: StripeFake;
let folios: string[];
let cards = 0;
let addresses = 0;

beforeAll(async () => {
  fake = await startStripeFake({
    webhookSecret: WEBHOOK_SECRET,
    prices: FAKE_PRICE_AMOUNTS,
    now: () => new Date(clock),
  });
  stack = await startEdgeStack({
    now: () => clock,
    gatewayEnv: {
      TRIAL_STARTS_PER_ADDRESS_PER_HOUR: "3",
      TRIAL_STARTS_PER_EMAIL_DOMAIN_PER_DAY: "2",
    },
    keysOptions: {
      payments: new StripePaymentProvider({
        secretKey: "sk_test_edge",
        webhookSigningSecret: WEBHOOK_SECRET,
        prices: FAKE_PRICE_IDS,
        timeoutMs: 2_000,
        api: fake.api,
      }),
    },
  });
  // The edge follows tenant.changed, as in production.
  await stack.gateway.start();
  folios = await stack.ingestSample();
}, 120_000);
afterAll(async () => {
  await stack?.close();
  await fake?.close();
});

async function waitFor(probe: () => Promise<boolean>, what: string, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function newCard(behaviour: CardBehaviour = "ok") {
  cards++;
  const id = `pm_edge_${cards}`;
  fake.addCard(id, {
    fingerprint: `fp_edge_${cards}`,
    brand: "mastercard",
    last4: "4444",
    behaviour,
  });
  return id;
}

/** A trial start from an address of its own unless one is named. */
function startTrial(card: string, options: { email?: string; ip?: string; tier?: string } = {}) {
  addresses++;
  return stack.request("POST", "/v1/public/trials", {
    ip: options.ip ?? `192.0.2.${addresses % 250}`,
    body: {
      tier: options.tier ?? "starter",
      company: "Edge Realty",
      admin_email: options.email ?? `owner@edge${addresses}.test`,
      payment_method: card,
    },
  });
}

async function trial(behaviour: CardBehaviour = "ok", tier = "starter") {
  const response = await startTrial(newCard(behaviour), { tier });
  expect(response.statusCode).toBe(201);
  const body = response.json();
  const { rows } = await stack.harness.db
    .poolFor("keys")
    .query("SELECT payment_subscription_ref FROM tenants WHERE id = $1", [body.tenant.id]);
  return {
    tenantId: body.tenant.id as string,
    key: body.api_key.secret as string,
    ref: rows[0].payment_subscription_ref as string,
  };
}

function deliver(event: Pick<SignedEvent, "payload" | "signature">, ip = "203.0.113.77") {
  return stack.request("POST", WEBHOOK, {
    ip,
    headers: { "content-type": "application/json", "stripe-signature": event.signature },
    body: event.payload,
  });
}

function readLead(key: string) {
  return stack.request("GET", `/v1/leads/${folios[0]}`, { key });
}

describe("trial starts at the edge", () => {
  it("are limited per client address: the fourth start within the hour, declined cards counted, answers 429 and never reaches Stripe", async () => {
    const ip = "198.18.0.1";
    expect((await startTrial(newCard("declined"), { ip })).statusCode).toBe(402);
    expect((await startTrial(newCard(), { ip })).statusCode).toBe(201);
    expect((await startTrial(newCard(), { ip })).statusCode).toBe(201);
    const from = fake.requests.length;
    const refused = await startTrial(newCard(), { ip });
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({
      error: "rate_limited",
      detail: expect.stringContaining("this client address"),
    });
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(3_500);
    expect(fake.since(from)).toEqual([]);
    // Another address is not held back, and the hour passes.
    expect((await startTrial(newCard(), { ip: "198.18.0.2" })).statusCode).toBe(201);
    clock += 3_600_000;
    expect((await startTrial(newCard(), { ip })).statusCode).toBe(201);
  });

  it("are limited per email domain, subdomains included, counting only trials that started: refused cards from many addresses cannot use a domain up", async () => {
    for (let i = 0; i < 5; i++) {
      const declined = await startTrial(newCard("declined"), { email: `x${i}@victim.test` });
      expect(declined.statusCode).toBe(402);
    }
    expect((await startTrial(newCard(), { email: "a@victim.test" })).statusCode).toBe(201);
    expect((await startTrial(newCard(), { email: "b@sales.victim.test" })).statusCode).toBe(201);
    const from = fake.requests.length;
    const refused = await startTrial(newCard(), { email: "c@EU.Victim.test" });
    expect(refused.statusCode).toBe(429);
    expect(refused.json().detail).toContain("victim.test");
    expect(fake.since(from)).toEqual([]);
    clock += DAY;
    expect((await startTrial(newCard(), { email: "c@victim.test" })).statusCode).toBe(201);
  });

  it("count a trial waiting for 3-D Secure in its email domain's window, and confirm it through the edge once Stripe says it is authenticated", async () => {
    const waiting: string[] = [];
    for (const email of ["a@secure-domain.test", "b@eu.secure-domain.test"]) {
      const started = await startTrial(newCard("requires_action"), { email });
      expect(started.statusCode).toBe(202);
      waiting.push(started.json().client_secret);
    }
    // Two trials that may activate used the domain's two: a third start is refused before Stripe.
    const from = fake.requests.length;
    const third = await startTrial(newCard(), { email: "c@secure-domain.test" });
    expect(third.statusCode).toBe(429);
    expect(fake.since(from)).toEqual([]);

    const secret = waiting[0] ?? "";
    fake.authenticate(secret.split("_secret_")[0] ?? "", "succeeded");
    const confirmed = await stack.request("POST", "/v1/public/trials/confirm", {
      ip: "192.0.2.251",
      body: { client_secret: secret },
    });
    expect(confirmed.statusCode).toBe(201);
    expect(confirmed.json().api_key.secret).toMatch(/^th_live_/);
  });

  it("give a card one trial: the same card again, tokenised anew, answers 409 with a clear error", async () => {
    const card = newCard();
    expect((await startTrial(card)).statusCode).toBe(201);
    const again = `${card}_again`;
    fake.addCard(again, { fingerprint: `fp_edge_${cards}`, brand: "mastercard", last4: "4444" });
    const refused = await startTrial(again, { tier: "custom" });
    expect(refused.statusCode).toBe(409);
    expect(refused.json()).toMatchObject({
      error: "conflict",
      detail: expect.stringContaining("this card has already started a trial"),
    });
  });
});

describe("Stripe's webhook endpoint", () => {
  it("applies a signed event once: a replay is acknowledged and changes nothing", async () => {
    const tenant = await trial("charge_fails");
    clock += 14 * DAY;
    const [failed] = fake.advance(tenant.ref);
    if (!failed) {
      throw new Error("no event");
    }
    const first = await deliver(failed);
    expect(first.statusCode).toBe(200);
    expect(first.json()).toEqual({ received: true, outcome: "applied" });
    const pool = stack.harness.db.poolFor("keys");
    const state = async () =>
      (await pool.query("SELECT standing, revision FROM tenants WHERE id = $1", [tenant.tenantId]))
        .rows[0];
    const after = await state();
    expect(after.standing).toBe("past_due");
    const from = fake.requests.length;
    const replay = await deliver(failed);
    expect(replay.json()).toEqual({ received: true, outcome: "duplicate" });
    expect(fake.since(from)).toEqual([]);
    expect(await state()).toEqual(after);
  });

  it("refuses a forged or stale signature with 401 and a missing one with 400; an address that keeps forging gets 429", async () => {
    const tenant = await trial();
    const event = fake.endSubscription(tenant.ref);
    const forged = signPayload(event.payload, "whsec_not_ours", Math.floor(clock / 1000));
    expect((await deliver({ payload: event.payload, signature: forged })).statusCode).toBe(401);
    const missing = await stack.request("POST", WEBHOOK, {
      ip: "203.0.113.78",
      headers: { "content-type": "application/json" },
      body: event.payload,
    });
    expect(missing.statusCode).toBe(400);
    clock += 6 * 60_000;
    const stale = await deliver(event);
    expect(stale.statusCode).toBe(401);
    const { rows } = await stack.harness.db
      .poolFor("keys")
      .query("SELECT status FROM tenants WHERE id = $1", [tenant.tenantId]);
    expect(rows[0].status).toBe("trialing");
    let answer = 401;
    for (let i = 0; i < 70 && answer === 401; i++) {
      answer = (await deliver({ payload: event.payload, signature: forged }, "203.0.113.99"))
        .statusCode;
    }
    expect(answer).toBe(429);
  });
});

describe("a payment that fails", () => {
  it("keeps reads going while past due, suspends paid reads at the edge with 402 payment_required once the grace runs out (REST and MCP), keeps free operations, and restores reads at once when paid", async () => {
    const tenant = await trial("charge_fails", "operator");
    clock += 14 * DAY;
    for (const event of fake.advance(tenant.ref)) {
      expect((await deliver(event)).statusCode).toBe(200);
    }
    expect((await readLead(tenant.key)).statusCode).toBe(200);

    clock += 7 * DAY;
    expect(await stack.keys.accounts.suspendLapsedGrace()).toContain(tenant.tenantId);
    await waitFor(
      async () => (await readLead(tenant.key)).statusCode === 402,
      "suspension at the edge",
    );
    const refused = await readLead(tenant.key);
    expect(refused.json()).toMatchObject({
      error: "payment_required",
      detail: expect.stringContaining("grace period has ended"),
    });
    const search = await stack.request("GET", "/v1/leads?county=23&limit=5", { key: tenant.key });
    expect(search.json().error).toBe("payment_required");
    const mcp = await stack.request("POST", "/mcp", {
      key: tenant.key,
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify([
        {
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "get_lead", arguments: { folio: folios[1] } },
        },
      ]),
    });
    expect(mcp.body).toContain("payment_required");
    expect(mcp.body).not.toContain(`"folio":"${folios[1]}"`);
    // Free operations and billing keep working, so the tenant can see why and pay.
    expect((await stack.request("GET", "/v1/account", { key: tenant.key })).json()).toMatchObject({
      status: "active",
      standing: "suspended",
    });
    const billing = await stack.request("GET", "/v1/account/billing", { key: tenant.key });
    expect(billing.statusCode).toBe(200);
    expect(billing.json().invoices[0]).toMatchObject({ status: "open" });
    expect((await stack.request("GET", "/v1/watchlists", { key: tenant.key })).statusCode).toBe(
      200,
    );

    for (const event of fake.payOpenInvoices(tenant.ref)) {
      expect((await deliver(event)).statusCode).toBe(200);
    }
    await waitFor(async () => (await readLead(tenant.key)).statusCode === 200, "reads restored");
  });
});

describe("changing the subscription", () => {
  it("an upgrade moves the Stripe price and reaches the edge at once: the next request has the new tier's limits", async () => {
    const tenant = await trial("ok", "starter");
    const before = await stack.request("GET", "/v1/me", { key: tenant.key });
    expect(before.headers["x-ratelimit-limit"]).toBe("300");
    const from = fake.requests.length;
    const moved = await stack.request("POST", "/v1/account/tier", {
      key: tenant.key,
      body: { tier: "team" },
    });
    expect(moved.statusCode).toBe(200);
    expect(
      fake.since(from).map((each) => `${each.method} ${each.path} ${each.idempotencyKey}`),
    ).toEqual([
      `GET /v1/subscriptions/${tenant.ref} undefined`,
      `POST /v1/subscriptions/${tenant.ref} tier-${tenant.tenantId}-r1-team`,
    ]);
    const after = await stack.request("GET", "/v1/me", { key: tenant.key });
    expect(after.headers["x-ratelimit-limit"]).toBe("600");
    expect(after.headers["x-quota-lead-views-limit"]).toBe("5000");
  });

  it("cancelling before day 14 cancels the Subscription at Stripe, nothing is ever charged, and the keys stop working", async () => {
    const tenant = await trial();
    clock += 5 * DAY;
    const cancelled = await stack.request("POST", "/v1/account/cancel", { key: tenant.key });
    expect(cancelled.statusCode).toBe(200);
    expect(fake.subscriptions.get(tenant.ref)?.status).toBe("canceled");
    clock += 30 * DAY;
    expect(fake.advance(tenant.ref)).toEqual([]);
    const customer = fake.subscriptions.get(tenant.ref)?.customer;
    expect([...fake.invoices.values()].filter((invoice) => invoice.customer === customer)).toEqual(
      [],
    );
    expect((await readLead(tenant.key)).statusCode).toBe(401);
  });
});
