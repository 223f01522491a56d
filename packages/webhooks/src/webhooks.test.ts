import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import Fastify from "fastify";
import { afterAll, describe, expect, it } from "vitest";
import {
  createMemoryDedupe,
  DEFAULT_DEDUPE_TTL_MS,
  expressHandler,
  fastifyHandler,
  nodeHandler,
  type ReceivedDelivery,
  signatureHeader,
  verifyRequest,
  verifySignature,
} from "./index.ts";

const SECRET = "whsec_current_secret_for_tests_0123456789abcdef";
const OLD = "whsec_previous_secret_for_tests_0123456789abcd";
const body = JSON.stringify({
  event_id: "m_1",
  event_type: "watchlist.match",
  match: { folio: "23-1" },
});
const now = () => Math.floor(Date.now() / 1000);

describe("verifySignature", () => {
  it("accepts a valid signature under any of several secrets (the receiver's rotation cut-over)", () => {
    expect(verifySignature(body, signatureHeader(body, SECRET), [SECRET, OLD])).toMatchObject({
      ok: true,
      secretIndex: 0,
    });
    expect(verifySignature(body, signatureHeader(body, OLD), [SECRET, OLD])).toMatchObject({
      ok: true,
      secretIndex: 1,
    });
    expect(verifySignature(body, signatureHeader(body, OLD), [SECRET]).ok).toBe(false);
  });

  it("Signature scheme 1: a sender's header is exactly t=<unix_seconds>,v1=<hex>, one v1", () => {
    expect(signatureHeader(body, SECRET, 1_700_000_000)).toMatch(/^t=1700000000,v1=[0-9a-f]{64}$/);
  });

  it("rejects a missing header, a malformed one, a stale timestamp, a wrong secret and changed bytes", () => {
    expect(verifySignature(body, undefined, [SECRET])).toEqual({
      ok: false,
      reason: "missing_header",
    });
    expect(verifySignature(body, "v1=abc", [SECRET])).toEqual({
      ok: false,
      reason: "malformed_header",
    });
    expect(verifySignature(body, signatureHeader(body, SECRET, now() - 301), [SECRET])).toEqual({
      ok: false,
      reason: "stale_timestamp",
    });
    expect(verifySignature(body, signatureHeader(body, SECRET, now() + 301), [SECRET]).ok).toBe(
      false,
    );
    expect(verifySignature(body, signatureHeader(body, SECRET, now() - 299), [SECRET]).ok).toBe(
      true,
    );
    expect(verifySignature(body, signatureHeader(body, "whsec_other"), [SECRET])).toEqual({
      ok: false,
      reason: "bad_signature",
    });
    // Re-serialised JSON is different bytes: the raw body must be used.
    const reserialised = JSON.stringify(JSON.parse(body), null, 1);
    expect(verifySignature(reserialised, signatureHeader(body, SECRET), [SECRET]).ok).toBe(false);
  });

  it("honours a custom tolerance", () => {
    const header = signatureHeader(body, SECRET, now() - 100);
    expect(verifySignature(body, header, [SECRET], { toleranceSeconds: 60 }).ok).toBe(false);
  });
});

/** Posts to a receiver the way the dispatcher does. */
async function post(url: string, headers: Record<string, string>, payload = body) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: payload,
  });
  return { status: response.status, body: await response.json() };
}

const signed = (id: string, overrides: { t?: number; secret?: string } = {}) => ({
  "x-flpf-signature": signatureHeader(body, overrides.secret ?? SECRET, overrides.t ?? now()),
  "x-flpf-webhook-id": id,
  "x-flpf-event-type": "watchlist.match",
});

const servers: { close(): unknown }[] = [];
afterAll(async () => {
  for (const server of servers) {
    await server.close();
  }
});

async function nodeReceiver(onDelivery: (d: ReceivedDelivery) => void) {
  const server = createServer(
    nodeHandler({ secrets: [SECRET], dedupe: createMemoryDedupe(), onDelivery }),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push({ close: () => new Promise((resolve) => server.close(resolve)) });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

async function fastifyReceiver(onDelivery: (d: ReceivedDelivery) => void) {
  const app = Fastify();
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (_request, raw, done) =>
    done(null, raw),
  );
  app.post(
    "/hooks",
    fastifyHandler({ secrets: [SECRET], dedupe: createMemoryDedupe(), onDelivery }),
  );
  await app.listen({ port: 0, host: "127.0.0.1" });
  servers.push(app);
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/hooks`;
}

/** Express's request/response surface, driven directly (express.raw gives a Buffer body). */
async function expressReceiver(onDelivery: (d: ReceivedDelivery) => void) {
  const handle = expressHandler({ secrets: [SECRET], dedupe: createMemoryDedupe(), onDelivery });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      void handle(
        { headers: req.headers, body: Buffer.concat(chunks) },
        {
          status: (code: number) => ({
            json: (payload: unknown) => {
              res.writeHead(code, { "content-type": "application/json" });
              res.end(JSON.stringify(payload));
            },
          }),
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push({ close: () => new Promise((resolve) => server.close(resolve)) });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

describe.each([
  ["Node http", nodeReceiver],
  ["Express", expressReceiver],
  ["Fastify", fastifyReceiver],
])("the %s reference handler", (_name, start) => {
  it("answers 400 without a signature, 400 when stale, 401 when bad, 200 when valid, and dedupes on the webhook id", async () => {
    const handled: string[] = [];
    const url = await start((delivery) => {
      handled.push(delivery.webhookId);
      expect(delivery.payload).toEqual(JSON.parse(body));
      expect(delivery.eventType).toBe("watchlist.match");
    });
    const missing = await post(url, { "x-flpf-webhook-id": "wh_1" });
    expect(missing).toEqual({ status: 400, body: { ok: false, error: "missing_header" } });
    const stale = await post(url, signed("wh_1", { t: now() - 600 }));
    expect(stale).toEqual({ status: 400, body: { ok: false, error: "stale_timestamp" } });
    const bad = await post(url, signed("wh_1", { secret: "whsec_wrong" }));
    expect(bad).toEqual({ status: 401, body: { ok: false, error: "bad_signature" } });
    const tampered = await post(url, signed("wh_1"), body.replace("23-1", "23-2"));
    expect(tampered.status).toBe(401);
    const valid = await post(url, signed("wh_1"));
    expect(valid).toEqual({ status: 200, body: { ok: true } });
    const again = await post(url, signed("wh_1"));
    expect(again).toEqual({ status: 200, body: { ok: true, duplicate: true } });
    expect(handled).toEqual(["wh_1"]);
  });
});

describe("Signature scheme 6: the receiver's cut-over to a rotated secret", () => {
  it("accepts old and new while both are configured, and answers 503 (retried) rather than 401 while cutting over", async () => {
    const NEW = "whsec_rotated_secret_for_tests_0123456789abcdef";
    let secrets = [OLD];
    let cuttingOver = true;
    const handled: string[] = [];
    const options = {
      secrets: () => secrets,
      cuttingOver: () => cuttingOver,
      onDelivery: (delivery: ReceivedDelivery) => void handled.push(delivery.webhookId),
    };
    const request = (id: string, secret: string) => ({
      headers: {
        "x-flpf-signature": signatureHeader(body, secret),
        "x-flpf-webhook-id": id,
      },
      rawBody: body,
    });
    // Rotated, the receiver not yet holding the new secret: retryable, not a dead letter.
    expect((await verifyRequest(request("wh_a", NEW), options)).status).toBe(503);
    secrets = [NEW, OLD];
    expect((await verifyRequest(request("wh_a", NEW), options)).status).toBe(200);
    expect((await verifyRequest(request("wh_b", OLD), options)).status).toBe(200);
    secrets = [NEW];
    cuttingOver = false;
    expect((await verifyRequest(request("wh_c", OLD), options)).status).toBe(401);
    expect(handled).toEqual(["wh_a", "wh_b"]);
  });
});

describe("Delivery and retry contract: a receiver keeps seen delivery ids for the retry window plus the 30-day hold", () => {
  it("remembers an id by default past 36 minutes + 30 days (and a replay's own retries), and forgets it later", async () => {
    let clock = 0;
    const dedupe = createMemoryDedupe({ now: () => clock });
    await dedupe.add("wh_1");
    const minute = 60_000;
    const day = 1_440 * minute;
    // Dead-lettered at 35 min 36 s, replayed on the hold's last day, retried for 35 min 36 s more.
    clock = 30 * day + 72 * minute;
    expect(await dedupe.has("wh_1")).toBe(true);
    expect(DEFAULT_DEDUPE_TTL_MS).toBeGreaterThanOrEqual(30 * day + 72 * minute);
    clock = DEFAULT_DEDUPE_TTL_MS + 1;
    expect(await dedupe.has("wh_1")).toBe(false);
  });
});

describe("the dedupe helper", () => {
  it("remembers ids until they expire; a failed handler does not mark the id", async () => {
    let clock = 0;
    const dedupe = createMemoryDedupe({ ttlMs: 1000, now: () => clock });
    expect(await dedupe.firstSeen("a")).toBe(true);
    expect(await dedupe.firstSeen("a")).toBe(false);
    clock = 1001;
    expect(await dedupe.firstSeen("a")).toBe(true);

    let fail = true;
    const url = await nodeReceiver(() => {
      if (fail) {
        throw new Error("database down");
      }
    });
    expect((await post(url, signed("wh_retry"))).status).toBe(500);
    fail = false;
    expect(await post(url, signed("wh_retry"))).toEqual({ status: 200, body: { ok: true } });
  });
});
