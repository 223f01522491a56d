import { Readable } from "node:stream";
import { ApiError, type HttpApp } from "@th/service-kit";
import { bodyHoldsKey } from "./body-keys.ts";
import type { ClientLimits } from "./client-limits.ts";
import { hasBody, passesEdge } from "./edge-paths.ts";

const KEY_IN_BODY =
  "an API key must never be sent in the request body; send it as Authorization: Bearer <key>, and revoke this key";

/**
 * Every body that reaches the edge, on every method, is searched for a key as raw text before
 * any parser reads it: a member named twice cannot hide a key behind the one JSON keeps, and a
 * body no route reads (a GET's, a form's) has leaked the key as much as any. A request without
 * a body (most reads) passes without a promise.
 */
export function registerBodySearch(app: HttpApp, refuse: ClientLimits["refuse"]): void {
  const bodyLimit = app.initialConfig.bodyLimit ?? 1_048_576;
  app.addHook("preParsing", (request, _reply, payload, done) => {
    if (!hasBody(request) || !passesEdge(request)) {
      done(null, payload);
      return;
    }
    readBody(payload, bodyLimit).then(
      (bytes) => {
        if (bodyHoldsKey(bytes.toString("latin1"))) {
          refuse(request, KEY_IN_BODY).catch((error: Error) => done(error, payload));
          return;
        }
        const replay = Readable.from([bytes]) as Readable & { receivedEncodedLength: number };
        replay.receivedEncodedLength = bytes.length;
        done(null, replay);
      },
      (error: Error) => done(error, payload),
    );
  });
}

/**
 * No route reads text, so Fastify's own text/plain parser goes: such a body is 415 like any
 * other type no route reads (after the body search), not a 400 saying it is no object.
 */
export function refuseUnreadMediaTypes(app: HttpApp): void {
  app.removeContentTypeParser("text/plain");
  app.addContentTypeParser("*", { parseAs: "string" }, (request, _body, done) => {
    done(
      new ApiError(
        "unsupported_media_type",
        `Unsupported Media Type: ${request.headers["content-type"] ?? "none"}; send application/json`,
      ),
      undefined,
    );
  });
}

/** The whole body, refused with 413 past the limit the parsers would apply. */
function readBody(stream: NodeJS.ReadableStream, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    stream.on("data", (chunk: Buffer) => {
      length += chunk.length;
      if (length > limit) {
        stream.removeAllListeners("data");
        stream.resume();
        reject(new ApiError("payload_too_large", `the body exceeds ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    stream.on("end", () => resolve(Buffer.concat(chunks, length)));
    stream.on("error", reject);
  });
}
