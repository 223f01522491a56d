// The public sign-up page (decision 0364): a tier, the company, the first admin's email and
// password, and a card. With Stripe the card is typed into Stripe's own card element (a frame
// of js.stripe.com): the page gets a PaymentMethod id from Stripe.js and sends only that to the
// trial API, so the card never reaches us. A card that asks for 3-D Secure is authenticated in
// Stripe's frame with the SetupIntent's client secret, then the trial is confirmed. Served at its
// own path with its own content policy: every link out is a full page load.
import type { Stripe, StripeCardElement } from "@stripe/stripe-js";
// The loader without side effects: Stripe.js is fetched only when this page asks for it.
import { loadStripe } from "@stripe/stripe-js/pure/index.js";
import { PASSWORD_LENGTH } from "@th/api-schemas/catalogue";
import { useEffect, useRef, useState } from "react";
import { call, type Schemas, th } from "../api.ts";
import { Field, Problem, SecretOnce, TextField } from "../components.tsx";
import { TIER_LABELS, type Tier } from "../session.ts";
import { cardFormOf, needsAuthentication, SIGN_UP_TIERS, TEST_CARDS } from "../sign-up-logic.ts";
import "./sign-up.css";

type Trial = Schemas["StartTrialResponse"];

/** Stripe.js and its card element, mounted once the script has loaded. */
function useStripeCard(publishableKey: string | null) {
  const mount = useRef<HTMLDivElement>(null);
  const [stripe, setStripe] = useState<{ stripe: Stripe; card: StripeCardElement } | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  useEffect(() => {
    if (!publishableKey) {
      return;
    }
    let card: StripeCardElement | null = null;
    loadStripe(publishableKey)
      .then((loaded) => {
        if (!loaded || !mount.current) {
          throw new Error("Stripe.js did not load");
        }
        card = loaded.elements().create("card");
        card.mount(mount.current);
        setStripe({ stripe: loaded, card });
      })
      .catch(() => setFailed("The card form could not load. Check your connection and reload."));
    return () => card?.destroy();
  }, [publishableKey]);
  return { mount, stripe, failed };
}

/** The card's PaymentMethod id: Stripe's, from its card element, or the chosen test card. */
async function paymentMethodOf(
  stripe: { stripe: Stripe; card: StripeCardElement } | null,
  testCard: string,
  email: string,
): Promise<string> {
  if (!stripe) {
    return testCard;
  }
  const made = await stripe.stripe.createPaymentMethod({
    type: "card",
    card: stripe.card,
    billing_details: { email },
  });
  if (made.error || !made.paymentMethod) {
    throw new Error(made.error?.message ?? "The card could not be read.");
  }
  return made.paymentMethod.id;
}

/** Confirms a trial whose card's 3-D Secure succeeded: the server checks that with Stripe. */
function confirmTrial(clientSecret: string): Promise<Trial> {
  return call(th.POST("/v1/public/trials/confirm", { body: { client_secret: clientSecret } }));
}

/**
 * The trial started, through its card's 3-D Secure when the card asks for it. Once Stripe has
 * authenticated the card, `onAuthenticated` keeps the secret: should the confirmation fail, a
 * retry confirms again instead of starting over with a card that is already claimed.
 */
async function startTrial(
  stripe: Stripe | null,
  body: Schemas["StartTrialRequest"],
  on: { authenticating: () => void; authenticated: (clientSecret: string) => void },
): Promise<Trial> {
  const started: object = await call(th.POST("/v1/public/trials", { body }));
  if (!needsAuthentication(started)) {
    return started as Trial;
  }
  if (!stripe) {
    throw new Error("This card asks for authentication, which needs Stripe's card form.");
  }
  on.authenticating();
  const authenticated = await stripe.confirmCardSetup(started.client_secret);
  if (authenticated.error) {
    throw new Error(authenticated.error.message ?? "The card's authentication did not succeed.");
  }
  on.authenticated(started.client_secret);
  return confirmTrial(started.client_secret);
}

function CardInput(props: {
  form: ReturnType<typeof cardFormOf>["form"];
  mount: React.RefObject<HTMLDivElement | null>;
  testCard: string;
  onTestCard: (token: string) => void;
}) {
  if (props.form === "stripe") {
    return (
      <div className="field">
        <span className="label">Card</span>
        <div className="stripe-card" ref={props.mount} data-testid="card-element" />
        <p className="hint">
          Entered into Stripe's own form: the card number never reaches Terminal House. Nothing is
          charged before day 14.
        </p>
      </div>
    );
  }
  return (
    <Field
      label="Test card"
      hint="Test mode: this server uses the built-in test card processor, not Stripe. No real card is asked for or charged; pick how the test card behaves."
    >
      {(id, describedBy) => (
        <select
          id={id}
          aria-describedby={describedBy}
          value={props.testCard}
          onChange={(event) => props.onTestCard(event.target.value)}
        >
          {TEST_CARDS.map((card) => (
            <option key={card.token} value={card.token}>
              {card.label}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

export function SignUpPage() {
  const [{ form, publishableKey }] = useState(() => cardFormOf(document.head));
  const { mount, stripe, failed } = useStripeCard(publishableKey);
  const [tier, setTier] = useState<Tier>("starter");
  const [company, setCompany] = useState("");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [testCard, setTestCard] = useState(TEST_CARDS[0]?.token ?? "pm_card_visa");
  const [stage, setStage] = useState<"form" | "working" | "authenticating">("form");
  const [error, setError] = useState<unknown>(null);
  const [trial, setTrial] = useState<Trial | null>(null);
  const [stored, setStored] = useState(false);
  const [authenticatedSecret, setAuthenticatedSecret] = useState<string | null>(null);

  if (trial) {
    return (
      <main className="auth" id="main">
        <section className="auth-card" aria-labelledby="sign-up-done">
          <h1 id="sign-up-done">Your trial is active</h1>
          <p>
            {trial.tenant.company}'s 14-day {TIER_LABELS[trial.tenant.tier]} trial has started.
            Nothing is charged before day 14.
          </p>
          {stored ? null : (
            <SecretOnce
              title="Your first API key."
              secret={trial.api_key.secret}
              onDone={() => setStored(true)}
            />
          )}
          <p>
            <a className="button primary" href="/sign-in">
              Sign in to your dashboard
            </a>
          </p>
        </section>
      </main>
    );
  }

  const cardReady = form === "test-cards" || stripe !== null;
  return (
    <main className="auth" id="main">
      <form
        className="auth-card"
        aria-labelledby="sign-up-title"
        onSubmit={async (event) => {
          event.preventDefault();
          setStage("working");
          setError(null);
          try {
            if (authenticatedSecret) {
              setTrial(await confirmTrial(authenticatedSecret));
              return;
            }
            const paymentMethod = await paymentMethodOf(stripe, testCard, email);
            const body = {
              tier,
              company,
              admin_email: email,
              admin_password: password,
              payment_method: paymentMethod,
            };
            setTrial(
              await startTrial(stripe?.stripe ?? null, body, {
                authenticating: () => setStage("authenticating"),
                authenticated: setAuthenticatedSecret,
              }),
            );
          } catch (failure) {
            setError(failure);
          } finally {
            setStage("form");
          }
        }}
      >
        <div className="brand">
          <span className="brand-mark" aria-hidden="true">
            TH
          </span>
          <span>Terminal House</span>
        </div>
        <h1 id="sign-up-title">Start a 14-day trial</h1>
        <Field label="Plan">
          {(id) => (
            <select id={id} value={tier} onChange={(event) => setTier(event.target.value as Tier)}>
              {SIGN_UP_TIERS.map((each) => (
                <option key={each} value={each}>
                  {TIER_LABELS[each]}
                </option>
              ))}
            </select>
          )}
        </Field>
        <TextField
          label="Company"
          required
          maxLength={200}
          autoComplete="organization"
          value={company}
          onChange={(event) => setCompany(event.target.value)}
        />
        <TextField
          label="Email"
          type="email"
          required
          autoComplete="email"
          value={email}
          onChange={(event) => setEmail(event.target.value)}
        />
        <TextField
          label="Password"
          type="password"
          required
          minLength={PASSWORD_LENGTH.min}
          maxLength={PASSWORD_LENGTH.max}
          autoComplete="new-password"
          hint={`At least ${PASSWORD_LENGTH.min} characters; you sign in to the dashboard with it.`}
          value={password}
          onChange={(event) => setPassword(event.target.value)}
        />
        {form === "unavailable" ? (
          <p className="notice error" role="alert">
            Card sign-up is not available here yet. Contact sales to start a trial.
          </p>
        ) : (
          <CardInput form={form} mount={mount} testCard={testCard} onTestCard={setTestCard} />
        )}
        {failed ? <Problem error={new Error(failed)} /> : null}
        <Problem error={error} />
        {stage === "authenticating" ? (
          <p role="status">Your bank asks you to confirm the card: follow its window.</p>
        ) : null}
        <button
          type="submit"
          className="button primary wide"
          disabled={stage !== "form" || !cardReady || form === "unavailable"}
        >
          {stage === "form" ? "Start trial" : "Starting…"}
        </button>
        <p className="muted small">
          Already a customer? <a href="/sign-in">Sign in</a>
        </p>
      </form>
    </main>
  );
}
