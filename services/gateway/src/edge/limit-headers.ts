import type { QuotaState } from "./edge-context.ts";
import type { RateWindow } from "./edge-store.ts";
import { wholeNumberText } from "./number-text.ts";

/**
 * The six limit headers that every response carries, and what they say where no limit applies.
 *
 * A response with no tenant behind it (a 401, `/v1/health`, `/v1/public/*`, a 404 without a
 * credential, a 503 while authentication state is rebuilt, a request the server refused before
 * reading it) still carries all six. Where a figure has nothing to measure it is 0, and a time is
 * the current one: a limit of 0 with 0 remaining says "no allowance is metered here", never "you
 * have plenty left", and a reset of now says "nothing to wait for".
 */
export const LIMIT_HEADER_DOCS = {
  "X-RateLimit-Limit": {
    description:
      "Per-minute request ceiling of the tenant (shared by all of its keys). On a response with no tenant: the per-client-IP ceiling of the public endpoints or of failed authentication where one applied, else 0.",
    schema: { type: "integer", minimum: 0 },
  },
  "X-RateLimit-Remaining": {
    description:
      "Requests left in the current rolling minute of the same window as X-RateLimit-Limit; 0 where no window applied.",
    schema: { type: "integer", minimum: 0 },
  },
  "X-RateLimit-Reset": {
    description:
      "Unix seconds when the rolling minute frees a request; the current second where no window applied.",
    schema: { type: "integer", minimum: 0 },
  },
  "X-Quota-Lead-Views-Limit": {
    description:
      "The tenant's monthly lead-view cap. 0 on a response with no tenant (no quota applies to it).",
    schema: { type: "integer", minimum: 0 },
  },
  "X-Quota-Lead-Views-Remaining": {
    description:
      "Lead-views left in the tenant's current billing month. 0 on a response with no tenant.",
    schema: { type: "integer", minimum: 0 },
  },
  "X-Quota-Resets": {
    description:
      "RFC 3339 UTC time of the tenant's next billing anniversary, when the month's lead-views reset. On a response with no tenant: the current time (nothing to wait for).",
    schema: { type: "string", format: "date-time" },
  },
} as const;

/** The six headers of a tenant's request: its rolling minute and its month's lead-views. */
export function tenantLimitHeaders(
  window: RateWindow,
  quota: QuotaState,
  iso: (date: Date) => string,
): Record<string, string> {
  return {
    "x-ratelimit-limit": wholeNumberText(window.limit),
    "x-ratelimit-remaining": wholeNumberText(window.remaining),
    "x-ratelimit-reset": wholeNumberText(Math.ceil(window.resetAtMs / 1000)),
    "x-quota-lead-views-limit": wholeNumberText(quota.limit),
    "x-quota-lead-views-remaining": wholeNumberText(Math.max(0, quota.remaining ?? quota.limit)),
    "x-quota-resets": iso(quota.resetsAt),
  };
}

/** The six headers of a request with no tenant: the client's window where one applied. */
export function clientLimitHeaders(
  window: RateWindow | undefined,
  nowMs: number,
): Record<string, string> {
  const headers = window
    ? {
        "x-ratelimit-limit": wholeNumberText(window.limit),
        "x-ratelimit-remaining": wholeNumberText(window.remaining),
        "x-ratelimit-reset": wholeNumberText(Math.ceil(window.resetAtMs / 1000)),
      }
    : noWindowHeaders(nowMs);
  return { ...headers, ...noQuotaHeaders(nowMs) };
}

/** The window's three headers where no rolling minute applied to the request. */
function noWindowHeaders(nowMs: number): Record<string, string> {
  return {
    "x-ratelimit-limit": "0",
    "x-ratelimit-remaining": "0",
    "x-ratelimit-reset": wholeNumberText(Math.floor(nowMs / 1000)),
  };
}

/** The quota's three headers for a response with no tenant. */
function noQuotaHeaders(nowMs: number): Record<string, string> {
  return {
    "x-quota-lead-views-limit": "0",
    "x-quota-lead-views-remaining": "0",
    "x-quota-resets": rfc3339Second(nowMs),
  };
}

/** All six headers of a response about which nothing is known. */
export function tenantlessHeaders(nowMs: number): Record<string, string> {
  return { ...noWindowHeaders(nowMs), ...noQuotaHeaders(nowMs) };
}

/** The current second in the form the tenant's X-Quota-Resets takes (RFC 3339, UTC). */
function rfc3339Second(nowMs: number): string {
  return new Date(Math.floor(nowMs / 1000) * 1000).toISOString();
}
