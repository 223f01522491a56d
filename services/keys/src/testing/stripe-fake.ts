// A local HTTP server that answers the calls Stripe's API reference documents and the Stripe
// provider makes (customers, payment methods with a card fingerprint, setup intents,
// subscriptions, invoices), keeps what they create in memory, bills like Stripe when its clock
// is advanced, and signs the webhook events it produces with the SDK's own test-header helper.
// Tests point the SDK at it with its host, port and protocol options and assert every request,
// idempotency key included. Test fixture only: never imported by production code.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { addMonthsClamped } from "@th/billing";
import Stripe from "stripe";

/** How a test card behaves: set up and charged fine, declined, asking for 3-D Secure, or failing charges. */
export type CardBehaviour = "ok" | "declined" | "requires_action" | "charge_fails";

export interface FakeCard {
  fingerprint: string;
  brand: string;
  last4: string;
  behaviour?: CardBehaviour;
}

/** One request the fake received, decoded. */
export interface RecordedRequest {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  stripeVersion: string | undefined;
  authorization: string | undefined;
  params: Record<string, unknown>;
}

/** A webhook delivery as Stripe would send it: the raw body and its Stripe-Signature header. */
export interface SignedEvent {
  id: string;
  type: string;
  payload: string;
  signature: string;
}

type Json = Record<string, unknown>;

interface FakeSubscription extends Json {
  id: string;
  customer: string;
  status: string;
  trial_end: number | null;
  billing_cycle_anchor: number;
  default_payment_method: string | null;
  items: { object: "list"; data: Json[] };
}

const seconds = (at: Date) => Math.floor(at.getTime() / 1000);

/** `a[b][0][c]=v` pairs, as the SDK form-encodes parameters, back into nested values. */
export function decodeForm(text: string): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const pair of text.split("&")) {
    if (pair === "") {
      continue;
    }
    const [rawKey = "", rawValue = ""] = pair.split("=", 2);
    const key = decodeURIComponent(rawKey.replace(/\+/g, " "));
    const value = decodeURIComponent(rawValue.replace(/\+/g, " "));
    const path = key.split(/\]\[|\[|\]/).filter((part) => part !== "");
    let node: Record<string, unknown> | unknown[] = root;
    path.forEach((part, index) => {
      const last = index === path.length - 1;
      const container = node as Record<string, unknown>;
      if (last) {
        container[part] = value;
        return;
      }
      const nextIsIndex = /^\d+$/.test(path[index + 1] ?? "");
      container[part] ??= nextIsIndex ? [] : {};
      node = container[part] as Record<string, unknown>;
    });
  }
  return root;
}

/** A Stripe-Signature header for `payload` under `secret`, by the SDK's own test-header helper. */
export function signPayload(payload: string, secret: string, timestampSeconds: number): string {
  return Stripe.webhooks.generateTestHeaderString({
    payload,
    secret,
    timestamp: timestampSeconds,
  });
}

class StripeRefusal extends Error {
  readonly status: number;
  readonly body: Json;
  constructor(status: number, error: Json) {
    super(String(error.message));
    this.status = status;
    this.body = { error };
  }
}

const missing = (kind: string, id: string) =>
  new StripeRefusal(404, {
    type: "invalid_request_error",
    code: "resource_missing",
    message: `No such ${kind}: '${id}'`,
    param: "id",
  });

interface FakeOptions {
  webhookSecret: string;
  /** The Stripe Price ids the fake knows, with their monthly amounts in cents. */
  prices: Readonly<Record<string, number>>;
  now: () => Date;
}

/** What the fake holds: every request it received, and the objects its calls created. */
function fakeState(options: FakeOptions) {
  const counters = new Map<string, number>();
  return {
    options,
    requests: [] as RecordedRequest[],
    cards: new Map<string, FakeCard>(),
    customers: new Map<string, Json>(),
    setupIntents: new Map<string, Json>(),
    subscriptions: new Map<string, FakeSubscription>(),
    invoices: new Map<string, Json>(),
    newId: (prefix: string) => {
      const next = (counters.get(prefix) ?? 0) + 1;
      counters.set(prefix, next);
      return `${prefix}_fake${String(next).padStart(6, "0")}`;
    },
    now: () => seconds(options.now()),
  };
}

type FakeState = ReturnType<typeof fakeState>;

/** Cards, customers and the SetupIntents that confirm a card for a customer. */
function cardCalls(state: FakeState) {
  const { cards, customers, setupIntents, newId, now } = state;

  function paymentMethod(id: string): Json {
    const card = cards.get(id);
    if (!card) {
      throw missing("payment_method", id);
    }
    return {
      id,
      object: "payment_method",
      type: "card",
      card: {
        brand: card.brand,
        last4: card.last4,
        fingerprint: card.fingerprint,
        exp_month: 12,
        exp_year: 2030,
        funding: "credit",
        country: "US",
      },
      customer: null,
      created: now(),
      livemode: false,
      metadata: {},
    };
  }

  function createCustomer(params: Record<string, unknown>): Json {
    const customer = {
      id: newId("cus"),
      object: "customer",
      email: params.email ?? null,
      name: params.name ?? null,
      metadata: params.metadata ?? {},
      created: now(),
      livemode: false,
    };
    customers.set(customer.id, customer);
    return customer;
  }

  function createSetupIntent(params: Record<string, unknown>): Json {
    const customer = String(params.customer ?? "");
    if (!customers.has(customer)) {
      throw missing("customer", customer);
    }
    const pm = String(params.payment_method ?? "");
    const card = cards.get(pm);
    if (!card) {
      throw missing("payment_method", pm);
    }
    const id = newId("seti");
    const intent: Json = {
      id,
      object: "setup_intent",
      // As Stripe's: the intent's id, then a secret only the customer's browser is given.
      client_secret: `${id}_secret_${randomBytes(12).toString("hex")}`,
      customer,
      payment_method: pm,
      usage: params.usage ?? "off_session",
      metadata: params.metadata ?? {},
      status: "succeeded",
      last_setup_error: null,
      next_action: null,
      created: now(),
      livemode: false,
    };
    if (card.behaviour === "declined") {
      intent.status = "requires_payment_method";
      intent.last_setup_error = { code: "card_declined", message: "Your card was declined." };
      setupIntents.set(String(intent.id), intent);
      throw new StripeRefusal(402, {
        type: "card_error",
        code: "card_declined",
        decline_code: "generic_decline",
        message: "Your card was declined.",
        setup_intent: intent,
      });
    }
    if (card.behaviour === "requires_action") {
      intent.status = "requires_action";
      intent.next_action = {
        type: "use_stripe_sdk",
        use_stripe_sdk: { type: "three_d_secure_redirect" },
      };
    }
    setupIntents.set(String(intent.id), intent);
    return intent;
  }

  function setupIntentOf(id: string): Json {
    const found = setupIntents.get(id);
    if (!found) {
      throw missing("setup_intent", id);
    }
    return found;
  }

  return { paymentMethod, createCustomer, createSetupIntent, setupIntentOf };
}

/** Prices, subscriptions and invoices, and the documented routes of every call. */
function subscriptionCalls(state: FakeState, cardApi: ReturnType<typeof cardCalls>) {
  const { options, customers, subscriptions, invoices, newId, now } = state;
  const { paymentMethod, createCustomer, createSetupIntent, setupIntentOf } = cardApi;

  function priceOf(id: string): Json {
    if (options.prices[id] === undefined) {
      throw missing("price", id);
    }
    return {
      id,
      object: "price",
      unit_amount: options.prices[id],
      currency: "usd",
      recurring: { interval: "month" },
    };
  }

  function createSubscription(params: Record<string, unknown>): FakeSubscription {
    const customer = String(params.customer ?? "");
    if (!customers.has(customer)) {
      throw missing("customer", customer);
    }
    const items = (params.items as { price: string }[] | undefined) ?? [];
    const trialEnd = params.trial_end === undefined ? null : Number(params.trial_end);
    const anchor = Number(params.billing_cycle_anchor ?? trialEnd ?? now());
    const subscription: FakeSubscription = {
      id: newId("sub"),
      object: "subscription",
      customer,
      status: trialEnd !== null ? "trialing" : "active",
      trial_start: trialEnd !== null ? now() : null,
      trial_end: trialEnd,
      billing_cycle_anchor: anchor,
      default_payment_method: (params.default_payment_method as string | undefined) ?? null,
      metadata: params.metadata ?? {},
      cancel_at_period_end: false,
      canceled_at: null,
      created: now(),
      livemode: false,
      items: {
        object: "list",
        data: items.map((item) => ({
          id: newId("si"),
          object: "subscription_item",
          price: priceOf(item.price),
          quantity: 1,
          current_period_start: now(),
          current_period_end: trialEnd ?? anchor,
        })),
      },
    };
    subscriptions.set(subscription.id, subscription);
    return subscription;
  }

  function subscriptionOf(id: string): FakeSubscription {
    const found = subscriptions.get(id);
    if (!found) {
      throw missing("subscription", id);
    }
    return found;
  }

  function updateSubscription(id: string, params: Record<string, unknown>): FakeSubscription {
    const subscription = subscriptionOf(id);
    for (const item of (params.items as { id: string; price: string }[] | undefined) ?? []) {
      const held = subscription.items.data.find((each) => each.id === item.id);
      if (!held) {
        throw missing("subscription_item", item.id);
      }
      held.price = priceOf(item.price);
    }
    return subscription;
  }

  function cancelSubscription(id: string): FakeSubscription {
    const subscription = subscriptionOf(id);
    if (subscription.status === "canceled") {
      throw new StripeRefusal(400, {
        type: "invalid_request_error",
        message: `This subscription is already canceled: ${id}`,
      });
    }
    subscription.status = "canceled";
    subscription.canceled_at = now();
    return subscription;
  }

  function listInvoices(params: Record<string, unknown>): Json {
    const data = [...invoices.values()]
      .filter((invoice) => params.customer === undefined || invoice.customer === params.customer)
      .sort((a, b) => Number(b.created) - Number(a.created))
      .slice(0, Number(params.limit ?? 10));
    return { object: "list", data, has_more: false, url: "/v1/invoices" };
  }

  /** The documented routes this fake answers; anything else is Stripe's 404 for an unknown URL. */
  function answer(method: string, path: string, params: Record<string, unknown>): Json {
    const id = path.split("/")[3] ?? "";
    if (method === "GET" && /^\/v1\/payment_methods\/[^/]+$/.test(path)) {
      return paymentMethod(id);
    }
    if (method === "POST" && path === "/v1/customers") {
      return createCustomer(params);
    }
    if (method === "POST" && path === "/v1/setup_intents") {
      return createSetupIntent(params);
    }
    if (method === "GET" && /^\/v1\/setup_intents\/[^/]+$/.test(path)) {
      return setupIntentOf(id);
    }
    if (method === "POST" && path === "/v1/subscriptions") {
      return createSubscription(params);
    }
    if (method === "GET" && /^\/v1\/subscriptions\/[^/]+$/.test(path)) {
      return subscriptionOf(id);
    }
    if (method === "POST" && /^\/v1\/subscriptions\/[^/]+$/.test(path)) {
      return updateSubscription(id, params);
    }
    if (method === "DELETE" && /^\/v1\/subscriptions\/[^/]+$/.test(path)) {
      return cancelSubscription(id);
    }
    if (method === "GET" && path === "/v1/invoices") {
      return listInvoices(params);
    }
    throw new StripeRefusal(404, {
      type: "invalid_request_error",
      message: `Unrecognized request URL (${method}: ${path}).`,
    });
  }

  return { answer, subscriptionOf };
}

/** Stripe's billing: invoices opened as periods fall due, payments, and the events it signs. */
function billingRuns(state: FakeState, subscriptionOf: (id: string) => FakeSubscription) {
  const { options, cards, subscriptions, invoices, newId, now } = state;

  let eventCount = 0;
  /** An event as Stripe's webhook would deliver it, signed with the endpoint's secret. */
  function signedEvent(type: string, object: Json, previous?: Json): SignedEvent {
    eventCount++;
    const id = `evt_fake${String(eventCount).padStart(6, "0")}`;
    const payload = JSON.stringify(
      {
        id,
        object: "event",
        api_version: Stripe.API_VERSION,
        created: now(),
        type,
        livemode: false,
        pending_webhooks: 1,
        request: { id: null, idempotency_key: null },
        data: { object, ...(previous ? { previous_attributes: previous } : {}) },
      },
      null,
      2,
    );
    const signature = signPayload(payload, options.webhookSecret, now());
    return { id, type, payload, signature };
  }

  /** Opens an invoice for a period of the subscription and tries the card, as Stripe bills. */
  function bill(subscription: FakeSubscription, from: number, to: number, cents: number) {
    const invoice: Json = {
      id: newId("in"),
      object: "invoice",
      customer: subscription.customer,
      number: `FAKE-${String(invoices.size + 1).padStart(4, "0")}`,
      status: "open",
      amount_due: cents,
      amount_paid: 0,
      amount_remaining: cents,
      currency: "usd",
      created: now(),
      period_start: from,
      period_end: to,
      billing_reason: "subscription_cycle",
      attempted: true,
      attempt_count: 1,
      hosted_invoice_url: `https://invoice.stripe.fake/i/${invoices.size + 1}`,
      parent: {
        type: "subscription_details",
        subscription_details: { subscription: subscription.id, metadata: {} },
      },
    };
    invoices.set(String(invoice.id), invoice);
    const card = cards.get(subscription.default_payment_method ?? "");
    const previous = subscription.status;
    if (card?.behaviour === "charge_fails") {
      subscription.status = "past_due";
      return [
        signedEvent("invoice.payment_failed", invoice),
        signedEvent("customer.subscription.updated", subscription, { status: previous }),
      ];
    }
    invoice.status = "paid";
    invoice.amount_paid = cents;
    invoice.amount_remaining = 0;
    subscription.status = "active";
    return [
      signedEvent("invoice.paid", invoice),
      signedEvent("customer.subscription.updated", subscription, { status: previous }),
    ];
  }

  return {
    signedEvent,
    /**
     * Bills what falls due by the fake's clock (of one subscription, or of all): a trial that
     * ended is charged the prorated
     * period up to the billing-cycle anchor, a period that ended is charged the full month.
     * Returns the webhook events Stripe would send, in order.
     */
    advance(subscriptionId?: string): SignedEvent[] {
      const events: SignedEvent[] = [];
      const due = subscriptionId ? [subscriptionOf(subscriptionId)] : [...subscriptions.values()];
      for (const subscription of due) {
        const item = subscription.items.data[0] as Json;
        const monthly = Number((item.price as Json).unit_amount);
        if (subscription.status === "trialing" && (subscription.trial_end ?? 0) <= now()) {
          const from = subscription.trial_end as number;
          const to = subscription.billing_cycle_anchor;
          const monthStart = seconds(addMonthsClamped(new Date(to * 1000), -1));
          const cents = Math.round((monthly * (to - from)) / (to - monthStart));
          item.current_period_start = from;
          item.current_period_end = to;
          subscription.trial_end = from;
          events.push(...bill(subscription, from, to, cents));
        } else if (
          (subscription.status === "active" || subscription.status === "past_due") &&
          Number(item.current_period_end) <= now()
        ) {
          const from = Number(item.current_period_end);
          const to = seconds(addMonthsClamped(new Date(from * 1000), 1));
          item.current_period_start = from;
          item.current_period_end = to;
          events.push(...bill(subscription, from, to, monthly));
        }
      }
      return events;
    },
    /** The customer pays what is open (on the hosted invoice page, say, with a working card). */
    payOpenInvoices(subscriptionId: string): SignedEvent[] {
      const subscription = subscriptionOf(subscriptionId);
      const events: SignedEvent[] = [];
      for (const invoice of invoices.values()) {
        const parent = invoice.parent as { subscription_details: { subscription: string } };
        if (
          invoice.status === "open" &&
          parent.subscription_details.subscription === subscriptionId
        ) {
          invoice.status = "paid";
          invoice.amount_paid = invoice.amount_due;
          invoice.amount_remaining = 0;
          events.push(signedEvent("invoice.paid", invoice));
        }
      }
      const previous = subscription.status;
      subscription.status = "active";
      events.push(signedEvent("customer.subscription.updated", subscription, { status: previous }));
      return events;
    },
    /** Stripe ends a subscription by itself (its retries ran out, or an operator in its dashboard). */
    endSubscription(subscriptionId: string): SignedEvent {
      const subscription = subscriptionOf(subscriptionId);
      subscription.status = "canceled";
      subscription.canceled_at = now();
      return signedEvent("customer.subscription.deleted", subscription);
    },
  };
}

/** The test account's price of each tier, as the Stripe provider is configured with them. */
export const FAKE_PRICE_IDS = {
  starter: "price_starter",
  operator: "price_operator",
  team: "price_team",
  custom: "price_custom",
} as const;

/** What each of those prices charges a month, in cents, as the fake is started with them. */
export const FAKE_PRICE_AMOUNTS = {
  price_starter: 4_900,
  price_operator: 14_900,
  price_team: 39_900,
  price_custom: 99_900,
};

export async function startStripeFake(options: FakeOptions) {
  const state = fakeState(options);
  const { requests, cards, customers, setupIntents, subscriptions, invoices, newId } = state;
  const cardApi = cardCalls(state);
  const { answer, subscriptionOf } = subscriptionCalls(state, cardApi);
  const billing = billingRuns(state, subscriptionOf);

  /** What the next request answers with instead of its usual answer (an outage). */
  let outage: number | null = null;

  function handle(request: IncomingMessage, response: ServerResponse, body: string): void {
    const url = new URL(request.url ?? "/", "http://stripe.fake");
    // GET and DELETE carry their parameters in the query, the others in the body.
    const params = { ...decodeForm(url.search.slice(1)), ...decodeForm(body) };
    const header = (name: string) => {
      const value = request.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    requests.push({
      method: request.method ?? "GET",
      path: url.pathname,
      idempotencyKey: header("idempotency-key"),
      stripeVersion: header("stripe-version"),
      authorization: header("authorization"),
      params,
    });
    response.setHeader("content-type", "application/json");
    response.setHeader("request-id", newId("req"));
    // An outage answers with Stripe's 5xx and is not retried by the fake: the SDK retries it.
    if (outage !== null) {
      response.statusCode = outage;
      response.end(JSON.stringify({ error: { type: "api_error", message: "An error occurred." } }));
      return;
    }
    try {
      const result = answer(request.method ?? "GET", url.pathname, params);
      response.end(JSON.stringify(result));
    } catch (error) {
      if (!(error instanceof StripeRefusal)) {
        throw error;
      }
      response.statusCode = error.status;
      response.end(JSON.stringify(error.body));
    }
  }

  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => handle(request, response, Buffer.concat(chunks).toString("utf8")));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    api: { host: "127.0.0.1", port, protocol: "http" as const },
    requests,
    customers,
    subscriptions,
    invoices,
    setupIntents,
    /** A PaymentMethod the client would have made with Stripe's card element. */
    addCard(paymentMethodId: string, card: FakeCard) {
      cards.set(paymentMethodId, card);
    },
    /**
     * The customer completes (or fails) 3-D Secure in the browser, as Stripe.js's
     * confirmCardSetup does against Stripe: the SetupIntent succeeds, or goes back to
     * needing a payment method with the authentication's error.
     */
    authenticate(setupIntentId: string, outcome: "succeeded" | "failed") {
      const intent = cardApi.setupIntentOf(setupIntentId);
      intent.next_action = null;
      if (outcome === "succeeded") {
        intent.status = "succeeded";
        return;
      }
      intent.status = "requires_payment_method";
      intent.last_setup_error = {
        code: "setup_intent_authentication_failure",
        message: "The card's authentication failed.",
      };
    },
    /** Every later request answers with this 5xx until it is cleared (null). */
    setOutage(status: number | null) {
      outage = status;
    },
    ...billing,
    /** The requests after the first `from`, for asserting one step's calls. */
    since(from: number): RecordedRequest[] {
      return requests.slice(from);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export type StripeFake = Awaited<ReturnType<typeof startStripeFake>>;
