import { describe, expect, it } from "vitest";
import { SIGN_UP_CONTENT_POLICY, signUpPage } from "./sign-up-policy.ts";

const PAGE = "<html><head><title>t</title></head><body></body></html>";

describe("the sign-up page as the gateway serves it", () => {
  it("carries Stripe's card form and the publishable key when the key is set", () => {
    const page = signUpPage(PAGE, { publishableKey: "pk_live_abc123", production: true });
    expect(page).toContain('<meta name="card-form" content="stripe" />');
    expect(page).toContain('<meta name="stripe-publishable-key" content="pk_live_abc123" />');
  });

  it("offers the built-in test cards without a key in development, and no card form in production", () => {
    expect(signUpPage(PAGE, { production: false })).toContain('content="test-cards"');
    const production = signUpPage(PAGE, { production: true });
    expect(production).toContain('content="unavailable"');
    expect(production).not.toContain("stripe-publishable-key");
  });

  it("refuses a key that could break out of its attribute", () => {
    expect(() =>
      signUpPage(PAGE, { publishableKey: 'pk_live_x" /><script>', production: true }),
    ).toThrow(/publishable key/);
  });

  it("names no source outside Stripe's and the page's own origin", () => {
    const hosts = SIGN_UP_CONTENT_POLICY.match(/https:\/\/[^\s;]+/g) ?? [];
    expect(new Set(hosts)).toEqual(
      new Set([
        "https://js.stripe.com",
        "https://*.js.stripe.com",
        "https://hooks.stripe.com",
        "https://api.stripe.com",
      ]),
    );
    expect(SIGN_UP_CONTENT_POLICY).not.toContain("unsafe");
  });
});
