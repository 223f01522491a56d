import { type Limits, limitsFromHeaders, readCookie } from "./logic.ts";

/** An answer of the API that was not a success, in the shared error shape. */
export class ApiFailure extends Error {
  readonly status: number;
  readonly body: {
    error?: string;
    detail?: string;
    upgrade_url?: string;
    fields?: { path: string; message: string }[];
    accounts?: { tenant_id: string; company: string }[];
  };

  constructor(status: number, body: ApiFailure["body"]) {
    super(body.detail ?? `request failed with ${status}`);
    this.status = status;
    this.body = body;
  }
}

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
  return (
    readCookie(document.cookie, "__Host-th_csrf") ?? readCookie(document.cookie, "th_csrf") ?? ""
  );
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

export async function api<T = unknown>(
  method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE",
  path: string,
  body?: unknown,
  retried = false,
): Promise<T> {
  // On reads too: a read that costs lead-views is refused without it (or the browser's word
  // that this page sent it), so another site cannot spend the tenant's quota.
  const headers: Record<string, string> = { "x-csrf-token": csrfToken() };
  if (body !== undefined) {
    headers["content-type"] = "application/json";
  }
  const response = await fetch(path, {
    method,
    credentials: "same-origin",
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const limits = limitsFromHeaders((name) => response.headers.get(name));
  if (limits && limits.leadViewsLimit !== null) {
    lastLimits = limits;
    for (const listener of listeners) {
      listener(limits);
    }
  }
  if (response.status === 401 && !retried && !path.startsWith("/v1/dashboard/session")) {
    if (await refreshSession()) {
      return api<T>(method, path, body, true);
    }
    onSignedOut();
  }
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : undefined;
  if (!response.ok) {
    throw new ApiFailure(response.status, (parsed ?? {}) as ApiFailure["body"]);
  }
  return parsed as T;
}
