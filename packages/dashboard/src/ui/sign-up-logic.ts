import { CARD_FORM_META, type CardForm, STRIPE_KEY_META } from "../sign-up-policy.ts";
import type { Tier } from "./session.ts";

/** The built-in processor's test cards (services/keys, `LocalPaymentProvider`), as the page offers them. */
export const TEST_CARDS: readonly { token: string; label: string }[] = [
  { token: "pm_card_visa", label: "Visa 4242: charged at day 14" },
  { token: "pm_card_mastercard", label: "Mastercard 4444: charged at day 14" },
  { token: "pm_card_charge_fails", label: "Visa 0341: the day-14 charge fails" },
  { token: "pm_card_declined", label: "Visa 0002: declined at sign-up" },
];

export const SIGN_UP_TIERS: readonly Tier[] = ["starter", "operator", "team", "custom"];

/** The card form the gateway served this page with, and Stripe's publishable key for it. */
export function cardFormOf(head: Pick<ParentNode, "querySelector">): {
  form: CardForm;
  publishableKey: string | null;
} {
  const form = head.querySelector(`meta[name="${CARD_FORM_META}"]`)?.getAttribute("content");
  const key = head.querySelector(`meta[name="${STRIPE_KEY_META}"]`)?.getAttribute("content");
  if (form === "stripe" && key) {
    return { form, publishableKey: key };
  }
  // Served without a form (the development server) means the built-in processor.
  return { form: form === "unavailable" ? "unavailable" : "test-cards", publishableKey: null };
}

/** A trial start's answer: active with its key, or waiting for the card's 3-D Secure. */
export function needsAuthentication(
  answer: object,
): answer is { status: "requires_action"; client_secret: string } {
  return "status" in answer && answer.status === "requires_action" && "client_secret" in answer;
}
