import { PASSWORD_LENGTH } from "@th/api-schemas/catalogue";
import { useState } from "react";
import { ApiFailure, call, type Schemas, th } from "../api.ts";
import { Field, navigate, Problem, TextField } from "../components.tsx";
import type { Session } from "../session.ts";

type Account = NonNullable<Schemas["Error"]["accounts"]>[number];

export function SignInPage(props: { onSignedIn: (session: Session) => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  // An email and password that open several accounts: the API names them, the member picks one.
  const [accounts, setAccounts] = useState<Account[]>([]);
  const [tenantId, setTenantId] = useState("");
  return (
    <main className="auth" id="main">
      <form
        className="auth-card"
        aria-labelledby="sign-in-title"
        onSubmit={async (event) => {
          event.preventDefault();
          setBusy(true);
          setError(null);
          try {
            props.onSignedIn(
              await call(
                th.POST("/v1/dashboard/session", {
                  body: { email, password, ...(tenantId ? { tenant_id: tenantId } : {}) },
                }),
              ),
            );
            navigate("/overview");
          } catch (failure) {
            const several =
              failure instanceof ApiFailure && failure.status === 409
                ? (failure.body?.accounts ?? [])
                : [];
            if (several.length > 1) {
              setAccounts(several);
              setTenantId(several[0]?.tenant_id ?? "");
            } else {
              setError(failure);
            }
          } finally {
            setBusy(false);
          }
        }}
      >
        <div className="brand">
          <span className="brand-mark" aria-hidden="true">
            TH
          </span>
          <span>Terminal House</span>
        </div>
        <h1 id="sign-in-title">Sign in to your dashboard</h1>
        <TextField
          label="Email"
          type="email"
          autoComplete="username"
          required
          value={email}
          onChange={(event) => {
            setEmail(event.target.value);
            setAccounts([]);
            setTenantId("");
          }}
        />
        <TextField
          label="Password"
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onChange={(event) => setPassword(event.target.value)}
        />
        {accounts.length > 1 ? (
          <Field
            label="Account"
            hint="This email and password open several accounts: choose the one to sign in to."
          >
            {(id, hint) => (
              <select
                id={id}
                aria-describedby={hint}
                value={tenantId}
                onChange={(event) => setTenantId(event.target.value)}
              >
                {accounts.map((account) => (
                  <option key={account.tenant_id} value={account.tenant_id}>
                    {account.company}
                  </option>
                ))}
              </select>
            )}
          </Field>
        ) : null}
        <Problem
          error={
            error instanceof ApiFailure && error.status === 401
              ? new Error("That email and password do not match an account.")
              : error
          }
        />
        <button type="submit" className="button primary wide" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
        <p className="muted small">
          New admins set a password with the link from their trial or invitation.
        </p>
        <p className="muted small">
          {/* A page load of its own: the sign-up page's content policy admits Stripe.js. */}
          New here? <a href="/sign-up">Start a 14-day trial</a>
        </p>
      </form>
    </main>
  );
}

/** The one-time link: the token travels in the URL fragment, which never reaches a server log. */
export function SetPasswordPage() {
  const token = new URLSearchParams(window.location.hash.slice(1)).get("token") ?? "";
  const [password, setPassword] = useState("");
  const [confirm, setConfirm] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState(false);
  return (
    <main className="auth" id="main">
      <form
        className="auth-card"
        aria-labelledby="set-password-title"
        onSubmit={async (event) => {
          event.preventDefault();
          setError(null);
          if (password !== confirm) {
            setError(new Error("The two passwords differ."));
            return;
          }
          try {
            await call(th.POST("/v1/public/password", { body: { token, password } }));
            setDone(true);
          } catch (failure) {
            setError(failure);
          }
        }}
      >
        <h1 id="set-password-title">Choose your password</h1>
        {done ? (
          <>
            <p role="status">Your password is set.</p>
            <a className="button primary wide" href="/sign-in">
              Sign in
            </a>
          </>
        ) : (
          <>
            <TextField
              label="New password"
              hint={`At least ${PASSWORD_LENGTH.min} characters.`}
              type="password"
              autoComplete="new-password"
              minLength={PASSWORD_LENGTH.min}
              maxLength={PASSWORD_LENGTH.max}
              required
              value={password}
              onChange={(event) => setPassword(event.target.value)}
            />
            <TextField
              label="Repeat the password"
              type="password"
              autoComplete="new-password"
              required
              value={confirm}
              onChange={(event) => setConfirm(event.target.value)}
            />
            <Problem error={token ? error : new Error("This link has no token.")} />
            <button type="submit" className="button primary wide" disabled={!token}>
              Set password
            </button>
          </>
        )}
      </form>
    </main>
  );
}
