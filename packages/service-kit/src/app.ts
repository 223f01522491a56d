import { randomBytes } from "node:crypto";
import { type IncomingMessage, maxHeaderSize, STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import swagger from "@fastify/swagger";
import type { Logger } from "@th/telemetry";
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  LogController,
} from "fastify";
import {
  hasZodFastifySchemaValidationErrors,
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from "fastify-type-provider-zod";
import {
  ApiError,
  ERROR_STATUS,
  type ErrorCode,
  errorBodySchema,
  unavailableError,
  unavailableStore,
} from "./errors.ts";
import { duplicateMember } from "./json-members.ts";
import { rememberRawBody } from "./raw-body.ts";
import { RouteMethods } from "./route-methods.ts";
import { normalizePath } from "./url-normalization.ts";

export type HttpApp = FastifyInstance<
  // biome-ignore lint/suspicious/noExplicitAny: fastify's default server generics
  any,
  // biome-ignore lint/suspicious/noExplicitAny: fastify's default request generics
  any,
  // biome-ignore lint/suspicious/noExplicitAny: fastify's default reply generics
  any,
  Logger,
  ZodTypeProvider
>;

export interface HttpAppOptions {
  logger: Logger;
  title: string;
  version?: string;
  description?: string;
  /** Largest JSON body accepted; larger ones get 413. */
  bodyLimit?: number;
  /**
   * Headers for answers written before any route or hook runs (bytes that are not HTTP, a header
   * block over the size limit, a URL the router cannot read), where nothing is known of the caller.
   */
  outsideHeaders?: () => Record<string, string>;
  /** OpenAPI 3.1 `webhooks`: requests the service sends to its clients. */
  webhooks?: Record<string, unknown>;
  /** Headers every response carries, declared on every operation of the OpenAPI document. */
  documentedHeaders?: Record<string, { description: string; schema: Record<string, unknown> }>;
}

const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: "payload_too_large",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "unsupported_media_type",
  FST_ERR_CTP_EMPTY_JSON_BODY: "invalid_request",
  FST_ERR_CTP_INVALID_JSON_BODY: "invalid_request",
  FST_ERR_VALIDATION: "invalid_request",
};

const BAD_URL = new ApiError("invalid_request", "the URL holds a malformed percent-escape");

const ROUTER_ERRORS: Record<string, ApiError> = {
  FST_ERR_BAD_URL: BAD_URL,
  FST_ERR_MAX_PARAM_LENGTH: new ApiError(
    "invalid_request",
    "a path parameter is longer than any this API accepts",
  ),
};

/** Node's limit on a request's header block, the request line included (16 KiB unless set). */
const MAX_HEADER_BYTES = maxHeaderSize;

// Request ids need to be unique, not secret: a random prefix per process and a counter cost far
// less per request than a fresh UUID, and two processes share a prefix with odds of 2^-64.
const REQUEST_ID_PREFIX = `req_${randomBytes(8).toString("hex")}`;
let requestSequence = 0;

function nextRequestId(): string {
  requestSequence++;
  return `${REQUEST_ID_PREFIX}${requestSequence.toString(36).padStart(6, "0")}`;
}

/**
 * A Fastify instance with the project's conventions: zod schemas on every route (validation,
 * serialization and the OpenAPI document come from them), request ids, and one error handler
 * that answers `{error, detail}` and never leaks a stack trace.
 */
export async function createHttpApp(options: HttpAppOptions): Promise<HttpApp> {
  const outsideHeaders = options.outsideHeaders ?? (() => ({}));
  // Requests whose path holds a malformed percent-escape: routed with the escapes taken literally
  // so the hooks still run (the key checks, the caller's limit headers), then refused with 400.
  const badUrls = new WeakSet<IncomingMessage>();
  const app = Fastify({
    loggerInstance: options.logger,
    bodyLimit: options.bodyLimit ?? 1_048_576,
    genReqId: requestIdOf,
    // One line per request is written in onResponse below, with the URL scrubbed of keys.
    logController: new LogController({ disableRequestLogging: true }),
    // Every path parameter reaches its route, whose schema refuses what is too long with the
    // route's own answer (after authentication, so with the caller's limit headers). Node's
    // header limit (16 KiB, request line included) bounds a URL, and so any parameter, anyway.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_HEADER_BYTES },
    // One normal form of the path before routing (decision 0321): what the router matches, the
    // guards, the logs and the key search all see the same path.
    rewriteUrl: (request) => normalizePath(rewriteBadEscapes(request, badUrls)),
    // What the router still refuses before any route runs gets the same {error, detail} as the
    // rest, with a request id.
    frameworkErrors: (error, request, reply) => {
      const apiError = ROUTER_ERRORS[error.code] ?? toApiError(error);
      // Typed for some route's schema, which no route's error here has.
      void (reply as unknown as FastifyReply)
        .status(apiError.status)
        .headers({ ...outsideHeaders(), "x-request-id": request.id })
        .send(apiError.body(request.id));
    },
    clientErrorHandler: (error: NodeJS.ErrnoException, socket) =>
      answerNonHttp(error, socket, outsideHeaders),
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  const httpApp = app as unknown as HttpApp;
  const routeMethods = new RouteMethods();
  routeTables.set(httpApp, routeMethods);
  app.addHook("onRoute", (route) => {
    routeMethods.add(route.method, route.url);
    documentBodyErrors(route.schema);
  });
  await registerOpenApi(httpApp, options);
  addRequestIdAndLog(httpApp);
  refuseDuplicateMembers(httpApp);
  refuseBadInput(httpApp, badUrls);
  setErrorAnswers(httpApp, routeMethods);
  return httpApp;
}

const routeTables = new WeakMap<HttpApp, RouteMethods>();

/** Every route the app declares (HEAD aside), for tests that walk the route table. */
export function declaredRoutesOf(app: HttpApp): { method: string; url: string }[] {
  return routeTables.get(app)?.list() ?? [];
}

/** The declared path of the app's route that a method and a concrete path reach, if any. */
export function declaredRouteOf(app: HttpApp, method: string, path: string): string | undefined {
  return routeTables.get(app)?.routeFor(method, path);
}

/** The caller's request id when it is a sane one, else a fresh one. */
function requestIdOf(request: IncomingMessage): string {
  const incoming = request.headers["x-request-id"];
  return typeof incoming === "string" && /^[\w-]{8,64}$/.test(incoming)
    ? incoming
    : nextRequestId();
}

/** A path whose percent-escapes do not decode is routed with them taken literally, and noted. */
function rewriteBadEscapes(request: IncomingMessage, badUrls: WeakSet<IncomingMessage>): string {
  const url = request.url ?? "/";
  if (!url.includes("%")) {
    return url;
  }
  const query = url.indexOf("?");
  const path = query < 0 ? url : url.slice(0, query);
  try {
    decodeURIComponent(path);
    return url;
  } catch {
    badUrls.add(request);
    return `${path.replaceAll("%", "%25")}${query < 0 ? "" : url.slice(query)}`;
  }
}

/** What a connection's error means to the client: too slow, too large, or not HTTP. */
function nonHttpError(error: NodeJS.ErrnoException): ApiError {
  if (error.code === "ERR_HTTP_REQUEST_TIMEOUT") {
    return new ApiError(
      "request_timeout",
      "the request did not arrive in time (its headers or its body); send it at once",
    );
  }
  return error.code === "HPE_HEADER_OVERFLOW"
    ? new ApiError(
        "headers_too_large",
        `the request's header block exceeds ${MAX_HEADER_BYTES} bytes (the request line included)`,
      )
    : new ApiError("invalid_request", "the request is not valid HTTP/1.1");
}

/**
 * Bytes that are not HTTP never reach a route; they still get the same shape, a request id and
 * the headers every answer carries. A header block over the limit is 431 (RFC 6585).
 */
function answerNonHttp(
  error: NodeJS.ErrnoException,
  socket: Duplex,
  outsideHeaders: () => Record<string, string>,
): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const requestId = nextRequestId();
  const apiError = nonHttpError(error);
  const body = JSON.stringify(apiError.body(requestId));
  const headers = Object.entries({ ...outsideHeaders(), "x-request-id": requestId })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  socket.end(
    `HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${headers}Connection: close\r\n\r\n${body}`,
  );
}

/**
 * Every route that reads a body can answer 413 (too large) and 415 (not JSON); the document says
 * so without each route listing them.
 */
function documentBodyErrors(routeSchema: unknown): void {
  const schema = routeSchema as { body?: unknown; response?: Record<number, unknown> } | undefined;
  if (schema?.body !== undefined && schema.response) {
    for (const code of ["payload_too_large", "unsupported_media_type"] as const) {
      schema.response[ERROR_STATUS[code]] ??= errorBodySchema;
    }
  }
}

async function registerOpenApi(app: HttpApp, options: HttpAppOptions): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: options.title,
        version: options.version ?? "1.0.0",
        ...(options.description ? { description: options.description } : {}),
      },
      ...(options.webhooks ? { webhooks: options.webhooks } : {}),
      components: {
        securitySchemes: {
          bearerAuth: { type: "http", scheme: "bearer", bearerFormat: "th_live_…" },
        },
      },
    },
    transform: jsonSchemaTransform,
    transformObject: (input) =>
      withDocumentedHeaders(jsonSchemaTransformObject(input), options.documentedHeaders),
  });
}

/**
 * Every answer carries its request id, and every request leaves one log line. Callback hooks:
 * these run on every request, and an async hook costs a promise and a microtask each time.
 */
function addRequestIdAndLog(app: HttpApp): void {
  app.addHook("onSend", (request, reply, payload, done) => {
    reply.header("x-request-id", request.id);
    done(null, payload);
  });
  app.addHook("onResponse", (request, reply, done) => {
    request.log.info(
      {
        method: request.method,
        url: request.url,
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      "request",
    );
    done();
  });
}

/**
 * JSON bodies: a member named twice is refused before the parser keeps the last one, so the
 * service never acts on a value the sender's other reader would not see.
 */
function refuseDuplicateMembers(app: HttpApp): void {
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    rememberRawBody(request, body as string);
    const duplicate = duplicateMember(body as string);
    if (duplicate) {
      const path = ["body", ...duplicate].join(".");
      done(
        new ApiError(
          "invalid_request",
          `invalid body: ${path} is named more than once in its object; send each member once`,
          { fields: [{ path, message: "duplicate member" }] },
        ),
        undefined,
      );
      return;
    }
    parseJson(request, body as string, done);
  });
}

/** Refuses a malformed percent-escape and input carrying NUL, each after the edge's checks. */
function refuseBadInput(app: HttpApp, badUrls: WeakSet<IncomingMessage>): void {
  // After every onRequest hook (the edge's authentication), before the body is read.
  app.addHook("preParsing", (request, _reply, payload, done) => {
    if (badUrls.has(request.raw)) {
      done(BAD_URL, payload);
      return;
    }
    done(null, payload);
  });

  // Postgres text cannot hold NUL, so input carrying one is refused as bad input here instead of
  // failing the query that would store or compare it. A pre-handler runs after the edge's checks
  // and the schema's, so a key in the same request still gets its 401 and a tenant its headers.
  app.addHook("preHandler", (request, _reply, done) => {
    if (request.url.includes("%00")) {
      done(
        new ApiError(
          "invalid_request",
          "the URL holds a NUL character (%00), which no parameter accepts",
        ),
      );
      return;
    }
    if (request.body !== undefined && holdsNul(request.body)) {
      done(
        new ApiError(
          "invalid_request",
          "the body holds a NUL character (\\u0000), which no field accepts",
        ),
      );
      return;
    }
    done();
  });
}

/** Errors and unknown routes answer `{error, detail}`; a known path names the methods it takes. */
function setErrorAnswers(app: HttpApp, routeMethods: RouteMethods): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const apiError = toApiError(error);
    if (apiError.status === 503) {
      request.log.warn({ err: error }, "request refused: a store is unavailable");
    } else if (apiError.status >= 500) {
      request.log.error({ err: error }, "request failed");
    }
    void reply.status(apiError.status).headers(apiError.headers).send(apiError.body(request.id));
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split("?")[0] ?? "";
    const allowed = routeMethods.allowed(path);
    const error =
      allowed.length > 0
        ? new ApiError(
            "method_not_allowed",
            `${request.method} is not allowed on ${path}; it answers ${allowed.join(", ")}`,
            {},
            { allow: allowed.join(", ") },
          )
        : new ApiError("not_found", `no route for ${request.method} ${path}`);
    void reply.status(error.status).headers(error.headers).send(error.body(request.id));
  });
}

type OpenApiDocument = ReturnType<typeof jsonSchemaTransformObject>;

/**
 * Declares headers that every response carries on every response of every operation, once under
 * `components.headers` and by reference from each response.
 */
function withDocumentedHeaders(
  document: OpenApiDocument,
  headers: HttpAppOptions["documentedHeaders"],
): OpenApiDocument {
  if (!headers || !("openapi" in document)) {
    return document;
  }
  document.components = document.components ?? {};
  const components = document.components as { headers?: Record<string, unknown> };
  components.headers = { ...components.headers, ...headers };
  const refs = Object.fromEntries(
    Object.keys(headers).map((name) => [name, { $ref: `#/components/headers/${name}` }]),
  );
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations ?? {})) {
      const responses = (operation as { responses?: Record<string, { headers?: object }> })
        ?.responses;
      for (const response of Object.values(responses ?? {})) {
        response.headers = { ...refs, ...response.headers };
      }
    }
  }
  return document;
}

/** Whether a parsed body holds a NUL in any string, key or value, however deep. */
export function holdsNul(body: unknown): boolean {
  const pending: unknown[] = [body];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === "string") {
      if (item.includes("\u0000")) {
        return true;
      }
    } else if (item !== null && typeof item === "object" && !Buffer.isBuffer(item)) {
      for (const [key, value] of Object.entries(item)) {
        if (key.includes("\u0000")) {
          return true;
        }
        pending.push(value);
      }
    }
  }
  return false;
}

export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) {
    return error;
  }
  const fastifyError = error as FastifyError;
  if (hasZodFastifySchemaValidationErrors(fastifyError)) {
    const context = fastifyError.validationContext ?? "request";
    const fields = fastifyError.validation.flatMap((issue) => {
      // "/" is the whole body or query: its path is the context alone, not "body.".
      const path = `${context}${issue.instancePath === "/" ? "" : issue.instancePath.replaceAll("/", ".")}`;
      const keys = (issue.params as { keys?: unknown }).keys;
      // One field per unknown key, named, as the watchlist recipes report them.
      return issue.keyword === "unrecognized_keys" && Array.isArray(keys)
        ? keys.map((key) => ({ path: `${path}.${String(key)}`, message: "unknown field" }))
        : [{ path, message: issue.message ?? "is invalid" }];
    });
    return new ApiError(
      "invalid_request",
      `invalid ${context}: ${fields.map((field) => `${field.path} ${field.message}`).join("; ")}`,
      { fields },
    );
  }
  const mapped = fastifyError.code ? FASTIFY_CODES[fastifyError.code] : undefined;
  if (mapped) {
    return new ApiError(mapped, fastifyError.message);
  }
  if (fastifyError.statusCode === 400) {
    return new ApiError("invalid_request", fastifyError.message);
  }
  if (fastifyError.statusCode === 404) {
    return new ApiError("not_found", "not found");
  }
  const store = unavailableStore(error);
  if (store) {
    return unavailableError(store);
  }
  return new ApiError("internal", "something went wrong on our side; the request id identifies it");
}
