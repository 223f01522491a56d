/**
 * The six limit headers every authenticated response carries, parsed. A field is null when its
 * header is absent (public endpoints such as /v1/health carry none).
 */
export interface Limits {
  /** X-RateLimit-Limit: requests per rolling minute, shared by every key of the tenant. */
  rateLimit: number | null;
  /** X-RateLimit-Remaining: requests left in the current rolling minute. */
  rateRemaining: number | null;
  /** X-RateLimit-Reset: when the rolling minute resets. */
  rateResetsAt: Date | null;
  /** X-Quota-Lead-Views-Limit: the monthly lead-view cap. */
  leadViewsLimit: number | null;
  /** X-Quota-Lead-Views-Remaining: lead-views left in the current billing month. */
  leadViewsRemaining: number | null;
  /** X-Quota-Resets: the next billing anniversary, when the quota starts over. */
  quotaResetsAt: Date | null;
}

function integer(headers: Headers, name: string): number | null {
  const value = headers.get(name);
  if (value === null || !/^\d+$/.test(value.trim())) {
    return null;
  }
  return Number(value);
}

function date(value: string | null): Date | null {
  if (value === null) {
    return null;
  }
  const parsed = new Date(value);
  return Number.isNaN(parsed.getTime()) ? null : parsed;
}

export function parseLimits(headers: Headers): Limits {
  const reset = integer(headers, "x-ratelimit-reset");
  return {
    rateLimit: integer(headers, "x-ratelimit-limit"),
    rateRemaining: integer(headers, "x-ratelimit-remaining"),
    rateResetsAt: reset === null ? null : new Date(reset * 1000),
    leadViewsLimit: integer(headers, "x-quota-lead-views-limit"),
    leadViewsRemaining: integer(headers, "x-quota-lead-views-remaining"),
    quotaResetsAt: date(headers.get("x-quota-resets")),
  };
}
