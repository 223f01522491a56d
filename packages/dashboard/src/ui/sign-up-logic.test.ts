import { describe, expect, it } from "vitest";
import { cardFormOf, needsAuthentication } from "./sign-up-logic.ts";

function head(metas: Record<string, string>) {
  return {
    querySelector: (selector: string) => {
      const name = /name="([^"]+)"/.exec(selector)?.[1] ?? "";
      const content = metas[name];
      return content === undefined ? null : ({ getAttribute: () => content } as unknown as Element);
    },
  };
}

describe("the sign-up page's card form", () => {
  it("is Stripe's card element only with both the form and a publishable key", () => {
    expect(
      cardFormOf(head({ "card-form": "stripe", "stripe-publishable-key": "pk_test_1" })),
    ).toEqual({ form: "stripe", publishableKey: "pk_test_1" });
    expect(cardFormOf(head({ "card-form": "stripe" }))).toEqual({
      form: "test-cards",
      publishableKey: null,
    });
  });

  it("is none where the gateway says so (production without a key), else the test cards", () => {
    expect(cardFormOf(head({ "card-form": "unavailable" })).form).toBe("unavailable");
    expect(cardFormOf(head({})).form).toBe("test-cards");
  });

  it("tells a trial waiting for 3-D Secure from an active one", () => {
    expect(
      needsAuthentication({ status: "requires_action", client_secret: "seti_1_secret_2" }),
    ).toBe(true);
    expect(needsAuthentication({ tenant: {}, api_key: {} })).toBe(false);
  });
});
