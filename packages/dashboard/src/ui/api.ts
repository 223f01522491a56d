// The page's one way to the API: the typed client (`@th/client`), every path, parameter and
// answer typed from the OpenAPI document the gateway serves, authenticated by the session's
// cookies. This module adds what a signed-in page needs on top: the CSRF header, one refresh of
// an expired session, and the six limit headers of every answer for the header bar.
import {
  type components,
  createClient,
  type Limits,
  parseLimits,
  TerminalHouseError,
} from "@th/client";
import { readCookie } from "./logic.ts";

/** The answers' shapes, by their names in the OpenAPI document. */
export type Schemas = components["schemas"];

/**
 * An answer of the API that was not a success: the client's typed error (its `status`, `code`
 * and the `{error, detail, …}` body).
 */
export const ApiFailure = TerminalHouseError;
export type ApiFailure = TerminalHouseError;

type Listener = (limits: Limits) => void;
const listeners = new Set<Listener>();
let lastLimits: Limits | null = null;
let onSignedOut: () => void = () => {};

/** Every response's six headers feed the header bar: the page always shows the live state. */
export function subscribeLimits(listener: Listener): () => void {
  listeners.add(listener);
  if (lastLimits) {
    listener(lastLimits);
  }
  return () => listeners.delete(listener);
}

export function whenSignedOut(handler: () => void): void {
  onSignedOut = handler;
}

/** The session's CSRF cookie: `__Host-th_csrf` when served over TLS, `th_csrf` in development. */
function csrfToken(): string {
  const cookies = globalThis.document?.cookie ?? "";
  return readCookie(cookies, "__Host-th_csrf") ?? readCookie(cookies, "th_csrf") ?? "";
}

let refreshing: Promise<boolean> | null = null;

/** A fresh access cookie from the refresh cookie; one refresh at a time. */
export function refreshSession(): Promise<boolean> {
  refreshing ??= fetch("/v1/dashboard/session/refresh", {
    method: "POST",
    credentials: "same-origin",
    headers: { "x-csrf-token": csrfToken() },
  })
    .then((response) => response.ok)
    .catch(() => false)
    .finally(() => {
      refreshing = null;
    });
  return refreshing;
}

/** Only answers that speak of a tenant carry its quota; the bar keeps the last such. */
function publishLimits(response: Response): void {
  const limits = parseLimits(response.headers);
  if (limits.leadViewsLimit === null) {
    return;
  }
  lastLimits = limits;
  for (const listener of listeners) {
    listener(limits);
  }
}

async function send(request: Request): Promise<Response> {
  // On reads too: a read that costs lead-views is refused without it (or the browser's word
  // that this page sent it), so another site cannot spend the tenant's quota.
  request.headers.set("x-csrf-token", csrfToken());
  const response = await fetch(request);
  publishLimits(response);
  return response;
}

/**
 * The fetch the typed client calls with: an access cookie that has expired is refreshed once and
 * the call sent again; a session that cannot be refreshed signs the page out.
 */
async function sessionFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const request = new Request(input, init);
  const again = request.clone();
  const response = await send(request);
  if (
    response.status !== 401 ||
    new URL(request.url).pathname.startsWith("/v1/dashboard/session")
  ) {
    return response;
  }
  if (await refreshSession()) {
    return send(again);
  }
  onSignedOut();
  return response;
}

// Module scope runs in the component tests too, where there is no page; nothing is sent there.
const ORIGIN = globalThis.location?.origin ?? "http://localhost";

const client = createClient({ session: true, baseUrl: ORIGIN, fetch: sessionFetch });

/** Every operation of the API, typed: `th.GET("/v1/usage")`, `th.POST(…, { body })`. */
export const th = client.api;

/**
 * The body of a typed call; a refusal is thrown as the client's typed error (an `ApiFailure`).
 * `await call(th.GET("/v1/account"))` is the account, typed as the API declares it.
 */
export async function call<T>(
  pending: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<NonNullable<T>> {
  return (await client.unwrap(pending)).data;
}
