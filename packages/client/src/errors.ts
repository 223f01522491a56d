import type { components } from "./generated/openapi.ts";
import type { Limits } from "./limits.ts";

/** The error body every failed call answers with: `{error, detail, ...}`. */
export type ErrorBody = components["schemas"]["Error"];

/**
 * A call the API refused (any 4xx or 5xx). `code` is the body's `error`, one of a closed set;
 * the limit headers of the refusal are on `limits`.
 */
export class TerminalHouseError extends Error {
  readonly status: number;
  readonly code: ErrorBody["error"] | "unknown";
  readonly detail: string;
  readonly body: ErrorBody | undefined;
  readonly limits: Limits;
  readonly requestId: string | null;

  constructor(
    status: number,
    body: ErrorBody | undefined,
    limits: Limits,
    requestId: string | null,
  ) {
    super(body ? `${status} ${body.error}: ${body.detail}` : `HTTP ${status}`);
    this.name = "TerminalHouseError";
    this.status = status;
    this.code = body?.error ?? "unknown";
    this.detail = body?.detail ?? "";
    this.body = body;
    this.limits = limits;
    this.requestId = requestId;
  }
}

/** 402 `quota_exceeded`: the month's lead-views are spent; reads resume at the reset or an upgrade. */
export class QuotaExceededError extends TerminalHouseError {
  readonly upgrade_url: string;
  /** RFC 3339: the next billing anniversary. */
  readonly quota_resets_at: string;

  constructor(status: number, body: ErrorBody, limits: Limits, requestId: string | null) {
    super(status, body, limits, requestId);
    this.name = "QuotaExceededError";
    this.upgrade_url = body.upgrade_url ?? "";
    this.quota_resets_at = body.quota_resets_at ?? "";
  }
}

/** 429 `rate_limited`: wait `retry_after_seconds` (the Retry-After header) before the next call. */
export class RateLimitedError extends TerminalHouseError {
  readonly retry_after_seconds: number;

  constructor(
    status: number,
    body: ErrorBody,
    limits: Limits,
    requestId: string | null,
    retryAfterHeader: string | null,
  ) {
    super(status, body, limits, requestId);
    this.name = "RateLimitedError";
    this.retry_after_seconds = body.retry_after_seconds ?? retryAfterSeconds(retryAfterHeader) ?? 1;
  }
}

/** 403 `tier_required`: the tenant's tier does not open this surface or feature. */
export class TierRequiredError extends TerminalHouseError {
  readonly upgrade_url: string;

  constructor(status: number, body: ErrorBody, limits: Limits, requestId: string | null) {
    super(status, body, limits, requestId);
    this.name = "TierRequiredError";
    this.upgrade_url = body.upgrade_url ?? "";
  }
}

/** Retry-After in delta-seconds (the form the API sends); null when absent or not a number. */
export function retryAfterSeconds(header: string | null): number | null {
  if (header === null || !/^\d+$/.test(header.trim())) {
    return null;
  }
  return Number(header);
}

function isErrorBody(value: unknown): value is ErrorBody {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { error?: unknown }).error === "string" &&
    typeof (value as { detail?: unknown }).detail === "string"
  );
}

/** The typed error for a refused call. */
export function errorFor(response: Response, body: unknown, limits: Limits): TerminalHouseError {
  const requestId = response.headers.get("x-request-id");
  if (!isErrorBody(body)) {
    return new TerminalHouseError(response.status, undefined, limits, requestId);
  }
  if (response.status === 402 && body.error === "quota_exceeded") {
    return new QuotaExceededError(response.status, body, limits, requestId);
  }
  if (response.status === 429 && body.error === "rate_limited") {
    return new RateLimitedError(
      response.status,
      body,
      limits,
      requestId,
      response.headers.get("retry-after"),
    );
  }
  if (response.status === 403 && body.error === "tier_required") {
    return new TierRequiredError(response.status, body, limits, requestId);
  }
  return new TerminalHouseError(response.status, body, limits, requestId);
}
