import type { ZodType } from "zod";

/** The service that owns an operation: it holds the data and answers on its internal API. */
export type OperationOwner = "keys" | "matcher" | "parcels" | "pipeline" | "webhook-dispatcher";

/**
 * One public operation, declared once: the gateway publishes and forwards it, the owner binds
 * its handler to the same request schemas. Paths are Fastify paths (`:name` a segment,
 * `:name(regex)` a constrained one, `::` a literal colon).
 */
export interface Operation<ErrorCode extends string = string, Surface extends string = string> {
  operationId: string;
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** The path under which the gateway publishes the operation. */
  path: string;
  /** The path on the owner's internal API that the gateway calls. */
  internalPath: string;
  owner: OperationOwner;
  tags: readonly string[];
  summary?: string;
  params?: ZodType;
  querystring?: ZodType;
  body?: ZodType;
  /** The public answers on success, by status. */
  responses: Readonly<Record<number, ZodType>>;
  /** The error codes the operation may answer besides `invalid_request` and `internal`. */
  errors: readonly ErrorCode[];
  /** The surface a tier must open (billing's `Surface`); `rest` when not said. */
  surface?: Surface;
  /**
   * Who may call: `key` (the default) an API key or a dashboard session; `session` the same, but
   * the operation belongs to the dashboard and documents no key; `public` anyone, limited per
   * client IP, and the owner hears no caller.
   */
  access?: "key" | "session" | "public";
}

/** Declares an operation, keeping its schemas' exact types for the routes that bind it. */
export function defineOperation<const O extends Operation>(operation: O): O {
  return operation;
}

type RequestPart = "params" | "querystring" | "body";

/** The schemas an operation's request is validated with, for a route's `schema`. */
export function requestSchemas<const O extends Operation>(
  operation: O,
): { [K in Extract<keyof O, RequestPart>]: O[K] } {
  const schemas: Partial<Record<RequestPart, ZodType>> = {};
  for (const part of ["params", "querystring", "body"] as const) {
    if (operation[part] !== undefined) {
      schemas[part] = operation[part];
    }
  }
  return schemas as { [K in Extract<keyof O, RequestPart>]: O[K] };
}
