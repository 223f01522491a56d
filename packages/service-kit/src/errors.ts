import { z } from "zod";

/**
 * The closed set of error codes a client can see, and the one place that maps them to HTTP
 * status. Bodies always carry `{error, detail}`; some codes add the fields the spec gives them.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  quota_exceeded: 402,
  payment_declined: 402,
  payment_required: 402,
  tier_required: 403,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  seat_limit_reached: 409,
  cursor_expired: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  headers_too_large: 431,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** How long a client is asked to wait before trying again when the service cannot serve it. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export const errorBodySchema = z
  .object({
    error: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
    detail: z.string(),
    request_id: z.string().optional(),
    fields: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    upgrade_url: z.string().optional(),
    quota_resets_at: z.string().optional(),
    retry_after_seconds: z.number().int().optional(),
    retained_since: z
      .string()
      .optional()
      .describe(
        "cursor_expired: RFC 3339; every match made since this instant is kept and can be polled",
      ),
    accounts: z
      .array(z.object({ tenant_id: z.string(), company: z.string() }))
      .optional()
      .describe("A dashboard sign-in whose email and password open several accounts: pick one"),
  })
  .meta({ id: "Error" });

export type ErrorBody = z.infer<typeof errorBodySchema>;

/** An error meant for the client: its code picks the status and its detail is safe to show. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly extra: Omit<ErrorBody, "error" | "detail">;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    detail: string,
    extra: Omit<ErrorBody, "error" | "detail"> = {},
    headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = "ApiError";
    this.code = code;
    // Every 503 tells the client when to try again, as a 429 does.
    this.extra =
      code === "unavailable"
        ? { retry_after_seconds: UNAVAILABLE_RETRY_AFTER_SECONDS, ...extra }
        : extra;
    this.headers =
      code === "unavailable"
        ? { "retry-after": String(this.extra.retry_after_seconds), ...headers }
        : headers;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  body(requestId?: string): ErrorBody {
    return {
      error: this.code,
      detail: this.message,
      ...this.extra,
      ...(requestId ? { request_id: requestId } : {}),
    };
  }
}

/** Response schemas for every error status a route can answer, for the OpenAPI document. */
export function errorResponses(...codes: ErrorCode[]): Record<number, typeof errorBodySchema> {
  const responses: Record<number, typeof errorBodySchema> = {};
  for (const code of ["invalid_request", "internal", ...codes] as ErrorCode[]) {
    responses[ERROR_STATUS[code]] = errorBodySchema;
  }
  return responses;
}

/** Which store an error says is unreachable ("network": a socket failed, whose is not known). */
export type Store = "postgres" | "redis" | "kafka" | "network";

// Postgres SQLSTATEs of a server that is gone, going or not yet back: class 08 (connection
// exception), admin/crash shutdown, "cannot connect now" (starting up or shutting down), and
// too many connections. Any other SQLSTATE is about the statement, not the server.
const PG_UNAVAILABLE = new Set(["57P01", "57P02", "57P03", "53300"]);
// What node-postgres says when the socket went away or no connection came in time.
const PG_CONNECTION_MESSAGES = [
  "Connection terminated",
  "timeout exceeded when trying to connect",
  "Client has encountered a connection error and is not queryable",
  "Cannot use a pool after calling end on the pool",
];
// What ioredis says when it has no connection to send a command on.
const REDIS_NAMES = new Set(["MaxRetriesPerRequestError"]);
const REDIS_MESSAGES = [
  "Connection is closed.",
  "Stream isn't writeable",
  "Command timed out",
  "Reached the max retries per request limit",
];
// Socket failures, whoever's socket it was.
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
]);

/**
 * The store an error says is unreachable (Postgres, Redis or the broker), or undefined when the
 * error is about something else. The one place that tells an outage from a bug: such an error
 * answers 503 `unavailable` with `Retry-After`, and a consumer retries it for as long as the
 * outage lasts instead of parking the record.
 */
export function unavailableStore(error: unknown, depth = 0): Store | undefined {
  if (error === null || typeof error !== "object" || depth > 4) {
    return undefined;
  }
  const { name, code, message } = error as { name?: unknown; code?: unknown; message?: unknown };
  const text = typeof message === "string" ? message : "";
  if (typeof code === "string" && (PG_UNAVAILABLE.has(code) || code.startsWith("08"))) {
    return "postgres";
  }
  if (PG_CONNECTION_MESSAGES.some((fragment) => text.includes(fragment))) {
    return "postgres";
  }
  if (
    (typeof name === "string" && REDIS_NAMES.has(name)) ||
    REDIS_MESSAGES.some((fragment) => text.includes(fragment))
  ) {
    return "redis";
  }
  if (
    name === "BrokerConnectionError" ||
    name === "KafkaJSConnectionError" ||
    name === "KafkaJSNumberOfRetriesExceeded" ||
    name === "KafkaJSRequestTimeoutError" ||
    name === "PublishAbortedError" ||
    (name === "ProduceError" && (error as { retriable?: unknown }).retriable === true)
  ) {
    return "kafka";
  }
  if (typeof code === "string" && SOCKET_CODES.has(code)) {
    return "network";
  }
  const cause = (error as { cause?: unknown }).cause;
  return cause === undefined ? undefined : unavailableStore(cause, depth + 1);
}

/** The 503 a request gets when a store it needs is unreachable. */
export function unavailableError(store: Store): ApiError {
  const what = {
    postgres: "the database",
    redis: "the cache",
    kafka: "the event log",
    network: "a backing store",
  }[store];
  return new ApiError("unavailable", `${what} is unreachable for the moment; try again shortly`);
}
