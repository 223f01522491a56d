import type { Tier } from "@th/contracts";
import { ApiError } from "@th/service-kit";
import Stripe from "stripe";
import { processorStatusOf } from "../domain/billing.ts";
import {
  type BillingNotice,
  type CardInspection,
  type CustomerInput,
  type CustomerSetup,
  NoticeRefused,
  type PaymentProvider,
  type ProcessorInvoice,
  type ProcessorSubscription,
  type SetUpStatus,
  type SubscribeInput,
} from "../domain/payment-provider.ts";

/** How old a webhook's signed timestamp may be, in seconds: the SDK's default, five minutes. */
export const WEBHOOK_TOLERANCE_SECONDS = 300;

export interface StripeSettings {
  secretKey: string;
  webhookSigningSecret: string;
  /** The Stripe Price id of each tier's monthly subscription. */
  prices: Readonly<Record<Tier, string>>;
  /** How long one API call may take, retries aside. */
  timeoutMs: number;
  /**
   * Where the SDK sends its calls; unset, Stripe's API. Tests point it at a local server that
   * answers the documented calls.
   */
  api?: { host: string; port: number; protocol: "http" | "https" };
}

const seconds = (at: Date) => Math.floor(at.getTime() / 1000);
const instant = (unixSeconds: number) => new Date(unixSeconds * 1000);

/** A subscription as Stripe returns it, in the provider's words. */
function subscriptionOf(subscription: Stripe.Subscription): ProcessorSubscription {
  const status = processorStatusOf(subscription.status);
  const item = subscription.items.data[0];
  let nextChargeAt: Date | null = null;
  if (status === "trialing" && subscription.trial_end !== null) {
    nextChargeAt = instant(subscription.trial_end);
  } else if (status !== "cancelled" && item) {
    nextChargeAt = instant(item.current_period_end);
  }
  return { ref: subscription.id, status, nextChargeAt };
}

function invoiceOf(invoice: Stripe.Invoice): ProcessorInvoice {
  return {
    id: invoice.id,
    number: invoice.number,
    status: invoice.status ?? "draft",
    amountDueCents: invoice.amount_due,
    amountPaidCents: invoice.amount_paid,
    currency: invoice.currency,
    createdAt: instant(invoice.created),
    periodStart: instant(invoice.period_start),
    periodEnd: instant(invoice.period_end),
    hostedUrl: invoice.hosted_invoice_url ?? null,
  };
}

/** The subscription an event is about: the object itself, or an invoice's parent. */
function subscriptionRefOf(event: Stripe.Event): string | null {
  const object = event.data.object as { object?: string; id?: string };
  if (object.object === "subscription") {
    return object.id ?? null;
  }
  if (object.object === "invoice") {
    const parent = (object as Stripe.Invoice).parent?.subscription_details?.subscription;
    return typeof parent === "string" ? parent : (parent?.id ?? null);
  }
  return null;
}

/** Why a SetupIntent did not leave the card ready for later charges. */
function setupRefusal(intent: Stripe.SetupIntent): string {
  return intent.last_setup_error?.message ?? `the card could not be set up (${intent.status})`;
}

const idOf = (value: string | { id: string } | null): string | null =>
  value === null ? null : typeof value === "string" ? value : value.id;

/** A SetupIntent's state in the provider's words. */
function setUpStatusOf(intent: Stripe.SetupIntent): SetUpStatus {
  const waiting: readonly string[] = ["succeeded", "requires_action", "processing"];
  const status = waiting.includes(intent.status)
    ? (intent.status as "succeeded" | "requires_action" | "processing")
    : "refused";
  return {
    status,
    customerRef: idOf(intent.customer),
    paymentMethod: idOf(intent.payment_method),
    reason: status === "succeeded" ? "" : setupRefusal(intent),
  };
}

/**
 * A call to Stripe; Stripe out of reach (network, its 5xx, rate limits, a refused key) is a 503
 * for the caller, who may retry, with the cause kept for the log. Card declines and invalid
 * requests are the caller's to judge.
 */
async function call<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (error) {
    if (
      error instanceof Stripe.errors.StripeCardError ||
      error instanceof Stripe.errors.StripeInvalidRequestError
    ) {
      throw error;
    }
    throw Object.assign(
      new ApiError(
        "unavailable",
        "the card processor did not answer; nothing was changed, try again shortly",
      ),
      { cause: error },
    );
  }
}

/**
 * The Stripe provider (decision 0360), on Stripe's official SDK. Trial start: the PaymentMethod
 * is read for its card fingerprint, a Customer is created and the card confirmed by a
 * SetupIntent (nothing charged), then a Subscription on the tier's Price trials until day 14 and
 * bills monthly from the first paid anniversary. Stripe charges and retries by itself and says
 * so by webhook; every state change is read back from the Subscription (see readNotice).
 */
export class StripePaymentProvider implements PaymentProvider {
  readonly name = "stripe";
  readonly chargesOnItsOwn = true;
  private readonly stripe: Stripe;
  private readonly settings: StripeSettings;

  constructor(settings: StripeSettings) {
    this.settings = settings;
    this.stripe = new Stripe(settings.secretKey, {
      // Every retried POST reuses the idempotency key given below, so a retry is harmless.
      maxNetworkRetries: 2,
      timeout: settings.timeoutMs,
      appInfo: { name: "terminal-house" },
      ...(settings.api ?? {}),
    });
  }

  async inspectCard(paymentMethod: string): Promise<CardInspection> {
    try {
      const method = await call(() => this.stripe.paymentMethods.retrieve(paymentMethod));
      const card = method.card;
      if (method.type !== "card" || !card?.fingerprint) {
        return { ok: false, reason: "the payment method is not a card" };
      }
      return {
        ok: true,
        card: { fingerprint: card.fingerprint, brand: card.brand, last4: card.last4 },
      };
    } catch (error) {
      if (error instanceof Stripe.errors.StripeInvalidRequestError) {
        return { ok: false, reason: "unknown payment method" };
      }
      throw error;
    }
  }

  async setUpCustomer(input: CustomerInput): Promise<CustomerSetup> {
    const metadata = { tenant_id: input.tenantId };
    const customer = await call(() =>
      this.stripe.customers.create(
        { email: input.email, name: input.company, metadata },
        { idempotencyKey: `trial-${input.tenantId}-customer` },
      ),
    );
    try {
      const intent = await call(() =>
        this.stripe.setupIntents.create(
          {
            customer: customer.id,
            payment_method: input.paymentMethod,
            allowed_payment_method_types: ["card"],
            usage: "off_session",
            confirm: true,
            metadata,
          },
          { idempotencyKey: `trial-${input.tenantId}-setup-intent` },
        ),
      );
      if (intent.status === "succeeded") {
        return { ok: true, customerRef: customer.id };
      }
      // 3-D Secure: the customer's browser completes it with Stripe.js and the client secret.
      if (intent.status === "requires_action" && intent.client_secret) {
        return {
          ok: "requires_action",
          customerRef: customer.id,
          setupIntentRef: intent.id,
          clientSecret: intent.client_secret,
        };
      }
      return { ok: false, reason: setupRefusal(intent) };
    } catch (error) {
      if (error instanceof Stripe.errors.StripeCardError) {
        return { ok: false, reason: error.message };
      }
      throw error;
    }
  }

  async setUpStatus(setupIntentRef: string): Promise<SetUpStatus> {
    try {
      return setUpStatusOf(await call(() => this.stripe.setupIntents.retrieve(setupIntentRef)));
    } catch (error) {
      if (error instanceof Stripe.errors.StripeInvalidRequestError) {
        return { status: "refused", customerRef: null, paymentMethod: null, reason: error.message };
      }
      throw error;
    }
  }

  async subscribe(input: SubscribeInput): Promise<ProcessorSubscription> {
    const subscription = await call(() =>
      this.stripe.subscriptions.create(
        {
          customer: input.customerRef,
          items: [{ price: this.settings.prices[input.tier] }],
          default_payment_method: input.paymentMethod,
          trial_end: seconds(input.trialEndsAt),
          billing_cycle_anchor: seconds(input.anchorAt),
          proration_behavior: "create_prorations",
          off_session: true,
          metadata: { tenant_id: input.tenantId },
        },
        { idempotencyKey: `trial-${input.tenantId}-subscription` },
      ),
    );
    return subscriptionOf(subscription);
  }

  async moveTier(input: {
    tenantId: string;
    subscriptionRef: string;
    tier: Tier;
    revision: number;
  }): Promise<ProcessorSubscription> {
    const current = await call(() => this.stripe.subscriptions.retrieve(input.subscriptionRef));
    const item = current.items.data[0];
    if (!item) {
      throw new Error(`subscription ${input.subscriptionRef} has no item to move`);
    }
    const moved = await call(() =>
      this.stripe.subscriptions.update(
        input.subscriptionRef,
        {
          items: [{ id: item.id, price: this.settings.prices[input.tier] }],
          proration_behavior: "create_prorations",
        },
        { idempotencyKey: `tier-${input.tenantId}-r${input.revision}-${input.tier}` },
      ),
    );
    return subscriptionOf(moved);
  }

  async cancel(input: { tenantId: string; subscriptionRef: string }): Promise<void> {
    try {
      await call(() =>
        this.stripe.subscriptions.cancel(
          input.subscriptionRef,
          { invoice_now: false, prorate: false },
          { idempotencyKey: `cancel-${input.tenantId}` },
        ),
      );
    } catch (error) {
      // Cancelled already (in Stripe's dashboard, or by an earlier attempt): nothing is left to stop.
      if (
        error instanceof Stripe.errors.StripeInvalidRequestError &&
        (error.code === "resource_missing" || /cancel/i.test(error.message))
      ) {
        return;
      }
      throw error;
    }
  }

  async subscription(subscriptionRef: string): Promise<ProcessorSubscription> {
    return subscriptionOf(await call(() => this.stripe.subscriptions.retrieve(subscriptionRef)));
  }

  async invoices(customerRef: string): Promise<ProcessorInvoice[]> {
    const page = await call(() => this.stripe.invoices.list({ customer: customerRef, limit: 12 }));
    return page.data.map(invoiceOf);
  }

  readNotice(payload: string, signature: string, receivedAt: Date): BillingNotice {
    let event: Stripe.Event;
    try {
      event = this.stripe.webhooks.constructEvent(
        payload,
        signature,
        this.settings.webhookSigningSecret,
        WEBHOOK_TOLERANCE_SECONDS,
        undefined,
        receivedAt.getTime(),
      );
    } catch (error) {
      throw new NoticeRefused(
        error instanceof Error ? error.message : "the signature does not verify",
      );
    }
    return { eventId: event.id, type: event.type, subscriptionRef: subscriptionRefOf(event) };
  }
}
