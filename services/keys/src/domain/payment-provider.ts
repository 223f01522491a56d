import { randomBytes } from "node:crypto";
import type { Tier } from "@th/contracts";
import type { ProcessorStatus } from "./billing.ts";

/**
 * The card processor behind trials and subscriptions (decision 0360). The card itself never
 * reaches us: the client gets a payment-method token from the processor, and we hold the
 * processor's references to the customer and the subscription. Every call that creates or
 * changes something at the processor carries an idempotency key the tenant and the change
 * determine, so a retried call never does it twice.
 */
export interface PaymentProvider {
  /** `local` (built in, for development and tests) or `stripe`. */
  readonly name: "local" | "stripe";
  /**
   * Whether the processor charges subscriptions by itself and reports by webhook (Stripe); the
   * built-in one is charged by this service's timer at the trial's end instead.
   */
  readonly chargesOnItsOwn: boolean;
  /** The card behind a payment-method token: its fingerprint, brand and last 4. */
  inspectCard(paymentMethod: string): Promise<CardInspection>;
  /**
   * Creates the customer and confirms the card for later charges, without charging it. A card
   * that asks for authentication (3-D Secure) leaves the confirmation to the customer's browser.
   */
  setUpCustomer(input: CustomerInput): Promise<CustomerSetup>;
  /** The card confirmation as the processor holds it now, after the customer authenticated. */
  setUpStatus(setupIntentRef: string): Promise<SetUpStatus>;
  /** A subscription on the tier's price, trialing until `trialEndsAt`, then billed monthly from `anchorAt`. */
  subscribe(input: SubscribeInput): Promise<ProcessorSubscription>;
  /** Moves the subscription to the tier's price; the processor prorates the difference. */
  moveTier(input: {
    tenantId: string;
    subscriptionRef: string;
    tier: Tier;
    /** The tenant's revision before the move: one move per revision, however often it is retried. */
    revision: number;
  }): Promise<ProcessorSubscription>;
  /** Cancels at once; nothing more is charged. */
  cancel(input: { tenantId: string; subscriptionRef: string }): Promise<void>;
  /** The subscription as the processor holds it now. */
  subscription(subscriptionRef: string): Promise<ProcessorSubscription>;
  /** The customer's latest invoices, newest first. */
  invoices(customerRef: string): Promise<ProcessorInvoice[]>;
  /**
   * A webhook delivery, verified: the event it carries, or a thrown `NoticeRefused` when its
   * signature does not verify (a wrong secret, an altered body, a stale timestamp).
   */
  readNotice(payload: string, signature: string, receivedAt: Date): BillingNotice;
}

export interface CardFacts {
  /** The processor's fingerprint of the card number: the same card gives the same one. */
  fingerprint: string;
  brand: string;
  last4: string;
}

export type CardInspection = { ok: true; card: CardFacts } | { ok: false; reason: string };

export interface CustomerInput {
  tenantId: string;
  paymentMethod: string;
  email: string;
  company: string;
}

export type CustomerSetup =
  | { ok: true; customerRef: string }
  | { ok: false; reason: string }
  | {
      /** The card asks for authentication: the browser completes it with the client secret. */
      ok: "requires_action";
      customerRef: string;
      setupIntentRef: string;
      clientSecret: string;
    };

/** A card confirmation read back: whether it succeeded, and for which customer and card. */
export interface SetUpStatus {
  status: "succeeded" | "requires_action" | "processing" | "refused";
  customerRef: string | null;
  paymentMethod: string | null;
  /** Why it did not succeed, in the processor's words. */
  reason: string;
}

export interface SubscribeInput {
  tenantId: string;
  customerRef: string;
  paymentMethod: string;
  tier: Tier;
  trialEndsAt: Date;
  anchorAt: Date;
}

export interface ProcessorSubscription {
  ref: string;
  status: ProcessorStatus;
  /** When the processor charges next: the trial's end while trialing, else the period's end. */
  nextChargeAt: Date | null;
}

export interface ProcessorInvoice {
  id: string;
  number: string | null;
  status: string;
  amountDueCents: number;
  amountPaidCents: number;
  currency: string;
  createdAt: Date;
  periodStart: Date;
  periodEnd: Date;
  /** The processor's hosted page of the invoice, where it can be paid or downloaded. */
  hostedUrl: string | null;
}

/** One processor event: its id (each is applied once) and the subscription it is about. */
export interface BillingNotice {
  eventId: string;
  type: string;
  subscriptionRef: string | null;
}

/** A webhook delivery whose signature did not verify. */
export class NoticeRefused extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "NoticeRefused";
  }
}

interface LocalCard {
  brand: string;
  last4: string;
  /** The day-14 charge fails. */
  failsCharge?: boolean;
}

const LOCAL_CARDS: Record<string, LocalCard> = {
  pm_card_visa: { brand: "visa", last4: "4242" },
  pm_card_mastercard: { brand: "mastercard", last4: "4444" },
  pm_card_charge_fails: { brand: "visa", last4: "0341", failsCharge: true },
};

/**
 * Development and test processor, refused in production. Documented test tokens:
 * - `pm_card_visa`, `pm_card_mastercard`: verify and charge successfully.
 * - `pm_card_declined`: declined at set-up; the trial is not created.
 * - `pm_card_charge_fails`: sets up, but the charge at the trial's end fails.
 * Each use of a plain token is a card of its own, so `npm start`, the demo and the tests can
 * start any number of trials. A token with a label after a dot (`pm_card_visa.alice`) is one
 * card wherever it is used, to try the one-trial-per-card rule.
 */
export class LocalPaymentProvider implements PaymentProvider {
  readonly name = "local";
  readonly chargesOnItsOwn = false;
  readonly charges: { customerRef: string; amountCents: number; idempotencyKey: string }[] = [];

  async inspectCard(paymentMethod: string): Promise<CardInspection> {
    const [token = "", label] = paymentMethod.split(".", 2);
    const card = LOCAL_CARDS[token];
    if (token === "pm_card_declined") {
      // Declined when it is set up, as a processor declines a card it cannot verify.
      return {
        ok: true,
        card: { fingerprint: this.fingerprint(label), brand: "visa", last4: "0002" },
      };
    }
    if (!card) {
      return { ok: false, reason: "unknown payment method" };
    }
    return {
      ok: true,
      card: { fingerprint: this.fingerprint(label), brand: card.brand, last4: card.last4 },
    };
  }

  async setUpCustomer(input: CustomerInput): Promise<CustomerSetup> {
    const token = input.paymentMethod.split(".", 1)[0] ?? "";
    if (token === "pm_card_declined") {
      return { ok: false, reason: "the card was declined" };
    }
    return { ok: true, customerRef: `cus_local_${token}_${input.tenantId}` };
  }

  async setUpStatus(): Promise<SetUpStatus> {
    // The built-in processor confirms every card at once; nothing waits for authentication.
    return {
      status: "refused",
      customerRef: null,
      paymentMethod: null,
      reason: "the built-in processor has no card authentication to complete",
    };
  }

  async subscribe(input: SubscribeInput): Promise<ProcessorSubscription> {
    return {
      ref: `sub_local_${input.tenantId}`,
      status: "trialing",
      nextChargeAt: input.trialEndsAt,
    };
  }

  async moveTier(input: { subscriptionRef: string }): Promise<ProcessorSubscription> {
    return { ref: input.subscriptionRef, status: "active", nextChargeAt: null };
  }

  async cancel(): Promise<void> {}

  async subscription(subscriptionRef: string): Promise<ProcessorSubscription> {
    return { ref: subscriptionRef, status: "active", nextChargeAt: null };
  }

  async invoices(customerRef: string): Promise<ProcessorInvoice[]> {
    return this.charges
      .filter((charge) => charge.customerRef === customerRef)
      .map((charge) => ({
        id: `in_local_${charge.idempotencyKey}`,
        number: null,
        status: "paid",
        amountDueCents: charge.amountCents,
        amountPaidCents: charge.amountCents,
        currency: "usd",
        createdAt: new Date(0),
        periodStart: new Date(0),
        periodEnd: new Date(0),
        hostedUrl: null,
      }));
  }

  readNotice(): BillingNotice {
    throw new NoticeRefused("the built-in processor sends no webhooks");
  }

  /** The charge at the trial's end; the idempotency key makes a retried charge happen once. */
  async charge(request: {
    customerRef: string;
    amountCents: number;
    idempotencyKey: string;
  }): Promise<{ ok: true; providerRef: string } | { ok: false; reason: string }> {
    if (request.customerRef.startsWith("cus_local_pm_card_charge_fails_")) {
      return { ok: false, reason: "insufficient funds" };
    }
    if (!this.charges.some((charge) => charge.idempotencyKey === request.idempotencyKey)) {
      this.charges.push(request);
    }
    return { ok: true, providerRef: `ch_local_${request.idempotencyKey}` };
  }

  private fingerprint(label: string | undefined): string {
    return label ? `fp_local_${label}` : `fp_local_${randomBytes(12).toString("hex")}`;
  }
}
