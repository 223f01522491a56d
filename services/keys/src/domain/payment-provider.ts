/**
 * The card processor behind trials and subscriptions. A real processor (Stripe, Adyen, ...)
 * implements the same three calls; the card itself never reaches us, only a token the client
 * obtained from the processor.
 */
export interface PaymentProvider {
  /** Verifies the card behind a payment-method token without charging it. */
  verifyCard(
    token: string,
    customer: { email: string; company: string },
  ): Promise<CardVerification>;
  /** Charges a verified customer; the idempotency key makes a retried charge happen once. */
  charge(request: {
    customerRef: string;
    amountCents: number;
    idempotencyKey: string;
  }): Promise<ChargeResult>;
}

export type CardVerification =
  | { ok: true; customerRef: string; brand: string; last4: string }
  | { ok: false; reason: string };

export type ChargeResult = { ok: true; providerRef: string } | { ok: false; reason: string };

/**
 * Development and test processor. Documented test tokens:
 * - `pm_card_visa`, `pm_card_mastercard`: verify and charge successfully.
 * - `pm_card_declined`: declined at verification; the trial is not created.
 * - `pm_card_charge_fails`: verifies, but the first charge (day 14) fails.
 */
export class LocalPaymentProvider implements PaymentProvider {
  readonly charges: { customerRef: string; amountCents: number; idempotencyKey: string }[] = [];

  async verifyCard(token: string): Promise<CardVerification> {
    const cards: Record<string, { brand: string; last4: string }> = {
      pm_card_visa: { brand: "visa", last4: "4242" },
      pm_card_mastercard: { brand: "mastercard", last4: "4444" },
      pm_card_charge_fails: { brand: "visa", last4: "0341" },
    };
    const card = cards[token];
    if (!card) {
      return {
        ok: false,
        reason: token === "pm_card_declined" ? "the card was declined" : "unknown payment method",
      };
    }
    return { ok: true, customerRef: `cus_local_${token}`, ...card };
  }

  async charge(request: {
    customerRef: string;
    amountCents: number;
    idempotencyKey: string;
  }): Promise<ChargeResult> {
    if (request.customerRef === "cus_local_pm_card_charge_fails") {
      return { ok: false, reason: "insufficient funds" };
    }
    if (!this.charges.some((charge) => charge.idempotencyKey === request.idempotencyKey)) {
      this.charges.push(request);
    }
    return { ok: true, providerRef: `ch_local_${request.idempotencyKey}` };
  }
}
