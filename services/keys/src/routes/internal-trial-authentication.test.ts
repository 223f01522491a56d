// Trials whose card asks for 3-D Secure (decision 0364), against the local server that answers
// Stripe's documented calls: the start leaves the SetupIntent to the browser and activates
// nothing; the confirmation reads the SetupIntent back from Stripe and only then activates the
// trial with its first key. Attacks: a client that claims success without authenticating, a
// guessed or borrowed client secret, a replayed or doubled confirmation, a lapsed wait.
import { contracts } from "@th/contracts";
import { createTestHarness, signedInject, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { buildApp } from "../app.ts";
import { StripePaymentProvider } from "../clients/stripe-payments.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import {
  FAKE_PRICE_AMOUNTS,
  FAKE_PRICE_IDS,
  type StripeFake,
  startStripeFake,
} from "../testing/stripe-fake.ts";

const START = new Date("2026-11-02T10:00:00.000Z");
let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;
let fake: StripeFake;
let clock = START;
let cards = 0;

beforeAll(async () => {
  fake = await startStripeFake({
    webhookSecret: "whsec_authentication",
    prices: FAKE_PRICE_AMOUNTS,
    now: () => clock,
  });
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [migrations],
    topics: [contracts.tenantChanged, contracts.keyIssued, contracts.keyRevoked],
  });
  const payments = new StripePaymentProvider({
    secretKey: "sk_test_authentication",
    webhookSigningSecret: "whsec_authentication",
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
  clock = START;
});

async function post(url: string, body: object) {
  if (!app.http) {
    throw new Error("no http app");
  }
  return app.http.inject(signedInject(app.http, "keys", { method: "POST", url, body }));
}

/** A card that asks for 3-D Secure, as Stripe's card element would have tokenised it. */
function secureCard(): string {
  cards++;
  const id = `pm_secure_${cards}`;
  fake.addCard(id, {
    fingerprint: `fp_secure_${cards}`,
    brand: "visa",
    last4: "3184",
    behaviour: "requires_action",
  });
  return id;
}

async function start(paymentMethod: string) {
  return post("/internal/v1/trials", {
    tier: "operator",
    company: "Secure Realty",
    admin_email: `owner-${paymentMethod}@secure-realty.test`,
    payment_method: paymentMethod,
    admin_password: "a long secure passphrase",
  });
}

const confirm = (clientSecret: string) =>
  post("/internal/v1/trials/confirm", { client_secret: clientSecret });

/** What a sign-up left in the keys service's tables for its email. */
async function storedFor(paymentMethod: string) {
  const pool = harness.db.poolFor("keys");
  const email = `owner-${paymentMethod}@secure-realty.test`;
  const members = await pool.query("SELECT tenant_id FROM members WHERE email = $1", [email]);
  const tenantId = members.rows[0]?.tenant_id ?? null;
  const keys = tenantId
    ? await pool.query("SELECT id FROM api_keys WHERE tenant_id = $1", [tenantId])
    : { rows: [] };
  const pending = await pool.query(
    "SELECT tenant_id, activated_at FROM pending_trials WHERE admin_email = $1",
    [email],
  );
  return { tenantId, keys: keys.rows.length, pending: pending.rows };
}

const subscriptionCreates = (from: number) =>
  fake.since(from).filter((r) => r.method === "POST" && r.path === "/v1/subscriptions");
const setupIntentOf = (clientSecret: string) => clientSecret.split("_secret_")[0] ?? "";

describe("a trial whose card asks for 3-D Secure", () => {
  it("answers 202 with the SetupIntent's client secret and requires_action: no tenant, member, key or subscription yet", async () => {
    const pm = secureCard();
    const from = fake.requests.length;
    const started = await start(pm);
    expect(started.statusCode).toBe(202);
    const body = started.json();
    expect(body).toEqual({ status: "requires_action", client_secret: expect.any(String) });
    expect(body.client_secret).toMatch(/^seti_\w+_secret_\w+$/);
    expect(fake.setupIntents.get(setupIntentOf(body.client_secret))?.status).toBe(
      "requires_action",
    );
    expect(subscriptionCreates(from)).toEqual([]);
    const stored = await storedFor(pm);
    expect(stored.tenantId).toBeNull();
    expect(stored.pending).toHaveLength(1);
    expect(stored.pending[0].activated_at).toBeNull();
  });

  it("S6 first key on activation: after the browser authenticates, the confirm reads the SetupIntent back from Stripe, subscribes trialing 14 days and activates the trial with its first key", async () => {
    const pm = secureCard();
    const { client_secret } = (await start(pm)).json();
    fake.authenticate(setupIntentOf(client_secret), "succeeded");
    clock = new Date(START.getTime() + 60_000);
    const from = fake.requests.length;

    const confirmed = await confirm(client_secret);
    expect(confirmed.statusCode).toBe(201);
    const trial = confirmed.json();
    expect(trial.tenant.status).toBe("trialing");
    expect(trial.api_key.secret).toMatch(/^th_live_/);
    expect(trial.password_setup).toBeNull();
    const calls = fake.since(from);
    expect(calls[0]).toMatchObject({
      method: "GET",
      path: `/v1/setup_intents/${setupIntentOf(client_secret)}`,
    });
    const [subscribe] = subscriptionCreates(from);
    expect(subscribe?.idempotencyKey).toBe(`trial-${trial.tenant.id}-subscription`);
    // The trial runs 14 days from its activation, the confirmation, not from the first form.
    expect(Number(subscribe?.params.trial_end)).toBe(
      Math.floor(clock.getTime() / 1000) + 14 * 86_400,
    );
    const stored = await storedFor(pm);
    expect(stored).toMatchObject({ tenantId: trial.tenant.id, keys: 1 });
    expect(stored.pending[0].activated_at).not.toBeNull();
    const claim = await harness.db
      .poolFor("keys")
      .query("SELECT tenant_id FROM trial_cards WHERE fingerprint = $1", [`fp_secure_${cards}`]);
    expect(claim.rows[0].tenant_id).toBe(trial.tenant.id);
  });

  it("refuses a confirm whose SetupIntent has not succeeded (the client only claims it did) with 402, and changes nothing", async () => {
    const pm = secureCard();
    const { client_secret } = (await start(pm)).json();
    const from = fake.requests.length;
    const claimed = await confirm(client_secret);
    expect(claimed.statusCode).toBe(402);
    expect(claimed.json().error).toBe("payment_declined");
    expect(subscriptionCreates(from)).toEqual([]);
    expect(await storedFor(pm)).toMatchObject({ tenantId: null, keys: 0 });

    // A failed authentication is refused the same way.
    fake.authenticate(setupIntentOf(client_secret), "failed");
    const failed = await confirm(client_secret);
    expect(failed.statusCode).toBe(402);
    expect(failed.json().detail).toContain("authentication failed");
    const stored = await storedFor(pm);
    expect(stored).toMatchObject({ tenantId: null, keys: 0 });
    expect(stored.pending[0].activated_at).toBeNull();
  });

  it("refuses a confirm with another secret for a real SetupIntent (its id known, its secret not) with 404, and changes nothing", async () => {
    const pm = secureCard();
    const { client_secret } = (await start(pm)).json();
    fake.authenticate(setupIntentOf(client_secret), "succeeded");
    const forged = `${setupIntentOf(client_secret)}_secret_forged0000000000`;
    const from = fake.requests.length;
    const answer = await confirm(forged);
    expect(answer.statusCode).toBe(404);
    expect(fake.since(from)).toEqual([]);
    expect(await storedFor(pm)).toMatchObject({ tenantId: null, keys: 0 });
    // The real secret still activates it.
    expect((await confirm(client_secret)).statusCode).toBe(201);
  });

  it("activates once: two confirmations at the same moment give one 201 and one 409, one subscription, never cancelled, and one key; a repeat later is 409", async () => {
    const pm = secureCard();
    const { client_secret } = (await start(pm)).json();
    fake.authenticate(setupIntentOf(client_secret), "succeeded");
    const from = fake.requests.length;
    const answers = await Promise.all([confirm(client_secret), confirm(client_secret)]);
    expect(answers.map((a) => a.statusCode).sort()).toEqual([201, 409]);
    const keys = subscriptionCreates(from).map((r) => r.idempotencyKey);
    expect(new Set(keys).size).toBe(1);
    expect(fake.since(from).filter((r) => r.method === "DELETE")).toEqual([]);
    expect([...fake.subscriptions.values()].filter((s) => s.status === "canceled")).toEqual([]);
    const again = await confirm(client_secret);
    expect(again.statusCode).toBe(409);
    expect((await storedFor(pm)).keys).toBe(1);
  });

  it("holds the card's claim while it waits (a second trial with the card is 409), and a wait past an hour cannot be confirmed (404)", async () => {
    const pm = secureCard();
    const { client_secret } = (await start(pm)).json();
    const again = await start(pm);
    expect(again.statusCode).toBe(409);
    fake.authenticate(setupIntentOf(client_secret), "succeeded");
    clock = new Date(START.getTime() + 61 * 60_000);
    const late = await confirm(client_secret);
    expect(late.statusCode).toBe(404);
    expect(await storedFor(pm)).toMatchObject({ tenantId: null, keys: 0 });
  });
});
