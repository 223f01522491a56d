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
  tier_required: 403,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  seat_limit_reached: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  headers_too_large: 431,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export const errorBodySchema = z
  .object({
    error: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
    detail: z.string(),
    request_id: z.string().optional(),
    fields: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    upgrade_url: z.string().optional(),
    quota_resets_at: z.string().optional(),
    retry_after_seconds: z.number().int().optional(),
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
    this.extra = extra;
    this.headers = headers;
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
