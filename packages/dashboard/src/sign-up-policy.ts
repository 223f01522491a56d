/**
 * The sign-up page: the one page that runs Stripe.js, so the one page whose Content-Security-Policy
 * names Stripe (decision 0364). The gateway serves it at its own path with this policy; every
 * other page keeps the dashboard's, which names no third party. The sources are Stripe's
 * documented list for Stripe.js and its card element with 3-D Secure: its script (and the
 * versioned scripts it loads), its frames (the card field, the authentication challenge) and its
 * API, nothing else.
 */
export const SIGN_UP_ROUTE = "/sign-up";

/** Where the page finds the Stripe publishable key. */
export const STRIPE_KEY_META = "stripe-publishable-key";

export const STRIPE_SOURCES = {
  script: ["https://js.stripe.com", "https://*.js.stripe.com"],
  frame: ["https://js.stripe.com", "https://*.js.stripe.com", "https://hooks.stripe.com"],
  connect: ["https://api.stripe.com"],
} as const;

export const SIGN_UP_CONTENT_POLICY = [
  "default-src 'self'",
  `script-src 'self' ${STRIPE_SOURCES.script.join(" ")}`,
  "style-src 'self'",
  "img-src 'self' data:",
  `connect-src 'self' ${STRIPE_SOURCES.connect.join(" ")}`,
  `frame-src ${STRIPE_SOURCES.frame.join(" ")}`,
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join("; ");

/** How the page takes the card: Stripe's card element, the built-in test cards, or not at all. */
export type CardForm = "stripe" | "test-cards" | "unavailable";
export const CARD_FORM_META = "card-form";

/**
 * The sign-up page as served: the card form it offers, and the publishable key when it is
 * Stripe's. The key is public by design (Stripe.js needs it in the browser) and must match
 * `pk_…` word characters, so it cannot break out of the attribute. Without a key, development
 * offers the built-in processor's test cards; production offers no card form rather than test
 * cards its processor would refuse.
 */
export function signUpPage(
  page: string,
  settings: { publishableKey?: string | undefined; production: boolean },
): string {
  const key = settings.publishableKey;
  if (key !== undefined && !/^pk_(live|test)_\w+$/.test(key)) {
    throw new Error("a Stripe publishable key is pk_live_… or pk_test_…");
  }
  const form: CardForm = key ? "stripe" : settings.production ? "unavailable" : "test-cards";
  const metas = [
    `<meta name="${CARD_FORM_META}" content="${form}" />`,
    ...(key ? [`<meta name="${STRIPE_KEY_META}" content="${key}" />`] : []),
  ];
  return page.replace("</head>", `${metas.join("\n")}\n</head>`);
}
