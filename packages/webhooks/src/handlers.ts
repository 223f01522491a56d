import type { IncomingMessage, ServerResponse } from "node:http";
import type { DedupeStore } from "./dedupe.ts";
import { HEADERS, verifySignature } from "./signature.ts";

export interface ReceivedDelivery {
  webhookId: string;
  eventType: string;
  /** The parsed JSON body (parsed only after the signature checked out). */
  payload: unknown;
  rawBody: Buffer;
}

export interface ReceiverOptions {
  /** Current secret first; during a rotation's cut-over also the previous one. */
  secrets: readonly string[] | (() => readonly string[]);
  /**
   * Set while you rotate (before calling `:rotate` until the new secret is in `secrets`): a
   * signature that matches none of `secrets` answers 503 instead of 401, so the sender retries
   * it on its schedule (1 s, 5 s, 30 s, 5 min) instead of dead-lettering it at once.
   */
  cuttingOver?: boolean | (() => boolean);
  toleranceSeconds?: number;
  /** Skips deliveries whose webhook id was handled already (answering 200). */
  dedupe?: DedupeStore;
  /** Your work. Throwing answers 500, so the sender retries later. */
  onDelivery(delivery: ReceivedDelivery): Promise<void> | void;
  now?: () => number;
}

export interface VerifyRequestResult {
  status: 200 | 400 | 401 | 500 | 503;
  body: { ok: boolean; error?: string; duplicate?: boolean };
}

type HeaderBag = Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string | undefined {
  const value = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The whole receiver decision, framework-free: 400 without a signature header (or a malformed
 * one, or no webhook id), 400 for a stale timestamp, 401 for a bad signature (503 while cutting
 * over to a rotated secret, so it is retried), 200 for a valid
 * delivery (after `onDelivery`, or at once for a duplicate), 500 when `onDelivery` throws.
 */
export async function verifyRequest(
  request: { headers: HeaderBag; rawBody: Buffer | string },
  options: ReceiverOptions,
): Promise<VerifyRequestResult> {
  const rawBody = Buffer.isBuffer(request.rawBody)
    ? request.rawBody
    : Buffer.from(request.rawBody, "utf8");
  const secrets = typeof options.secrets === "function" ? options.secrets() : options.secrets;
  const result = verifySignature(rawBody, header(request.headers, HEADERS.signature), secrets, {
    ...(options.toleranceSeconds !== undefined
      ? { toleranceSeconds: options.toleranceSeconds }
      : {}),
    ...(options.now ? { now: options.now() } : {}),
  });
  if (!result.ok) {
    if (result.reason !== "bad_signature") {
      return { status: 400, body: { ok: false, error: result.reason } };
    }
    const cuttingOver =
      typeof options.cuttingOver === "function" ? options.cuttingOver() : options.cuttingOver;
    return cuttingOver
      ? { status: 503, body: { ok: false, error: "unknown_secret_while_cutting_over" } }
      : { status: 401, body: { ok: false, error: result.reason } };
  }
  const webhookId = header(request.headers, HEADERS.webhookId);
  if (!webhookId) {
    return { status: 400, body: { ok: false, error: "missing_webhook_id" } };
  }
  if (options.dedupe && (await options.dedupe.has(webhookId))) {
    return { status: 200, body: { ok: true, duplicate: true } };
  }
  let payload: unknown;
  try {
    payload = JSON.parse(rawBody.toString("utf8"));
  } catch {
    return { status: 400, body: { ok: false, error: "invalid_json" } };
  }
  try {
    await options.onDelivery({
      webhookId,
      eventType: header(request.headers, HEADERS.eventType) ?? "",
      payload,
      rawBody,
    });
  } catch {
    return { status: 500, body: { ok: false, error: "handler_failed" } };
  }
  await options.dedupe?.add(webhookId);
  return { status: 200, body: { ok: true } };
}

/** `http.createServer(nodeHandler({...}))`: reads the raw body itself. */
export function nodeHandler(options: ReceiverOptions & { maxBodyBytes?: number }) {
  const limit = options.maxBodyBytes ?? 1_048_576;
  return (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
      }
    });
    req.on("end", () => {
      const answer =
        size > limit
          ? Promise.resolve<VerifyRequestResult>({
              status: 400,
              body: { ok: false, error: "body_too_large" },
            })
          : verifyRequest({ headers: req.headers, rawBody: Buffer.concat(chunks) }, options);
      void answer.then((result) => {
        res.writeHead(result.status, { "content-type": "application/json" });
        res.end(JSON.stringify(result.body));
      });
    });
  };
}

/** The parts of Express's request and response the handler uses. */
export type ExpressLikeHandler = (
  req: { headers: HeaderBag; body: unknown },
  res: { status(code: number): { json(body: unknown): unknown } },
) => Promise<void>;

/**
 * For Express: mount behind `express.raw({ type: "application/json" })` so `req.body` is the
 * raw Buffer (a JSON body parser would re-serialise and break the signature).
 */
export function expressHandler(options: ReceiverOptions): ExpressLikeHandler {
  return async (req, res) => {
    const raw = rawOf(req.body);
    const result = raw
      ? await verifyRequest({ headers: req.headers, rawBody: raw }, options)
      : ({ status: 400, body: { ok: false, error: "raw_body_required" } } as const);
    res.status(result.status).json(result.body);
  };
}

/** The parts of Fastify's request and reply the handler uses. */
export type FastifyLikeHandler = (
  request: { headers: HeaderBag; body: unknown },
  reply: { code(status: number): { send(body: unknown): unknown } },
) => Promise<unknown>;

/**
 * For Fastify: register a raw parser first so the body stays bytes:
 * `app.addContentTypeParser("application/json", { parseAs: "buffer" }, (_r, body, done) => done(null, body))`.
 */
export function fastifyHandler(options: ReceiverOptions): FastifyLikeHandler {
  return async (request, reply) => {
    const raw = rawOf(request.body);
    const result = raw
      ? await verifyRequest({ headers: request.headers, rawBody: raw }, options)
      : ({ status: 400, body: { ok: false, error: "raw_body_required" } } as const);
    return reply.code(result.status).send(result.body);
  };
}

function rawOf(body: unknown): Buffer | undefined {
  if (Buffer.isBuffer(body)) {
    return body;
  }
  if (typeof body === "string") {
    return Buffer.from(body, "utf8");
  }
  if (body instanceof Uint8Array) {
    return Buffer.from(body);
  }
  return undefined;
}
