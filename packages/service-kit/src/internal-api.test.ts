// Signed internal calls, tried the way a pod inside the cluster would try to get past them:
// no signature, a signature of its own making, a captured call replayed or altered, a call
// aimed at another route, and the same path spelled with percent-escapes.
import { DEV_INTERNAL_SIGNING_SECRETS, internalCallerKey } from "@th/config";
import { createLogger } from "@th/telemetry";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createHttpApp, type HttpApp } from "./app.ts";
import { errorResponses } from "./errors.ts";
import { INTERNAL_HEADERS, internalCaller, requireSignedCalls } from "./internal-api.ts";
import { NonceMemory } from "./internal-signature.ts";
import { percentEscapeAt, signedHeaders, signedInject } from "./signed-calls-testing.ts";

const RECEIVER = "parcels";
let app: HttpApp;

beforeAll(async () => {
  app = await createHttpApp({
    logger: createLogger({ service: "kit-test", level: "silent" }),
    title: "signed calls test",
  });
  requireSignedCalls(app, {
    service: RECEIVER,
    callerKeys: `gateway:${internalCallerKey(DEV_INTERNAL_SIGNING_SECRETS.gateway, RECEIVER)}`,
  });
  const response = {
    200: z.object({ route: z.string(), tenant: z.string() }),
    ...errorResponses(),
  };
  app.get("/internal/v1/items/count", { schema: { response } }, async (request) => ({
    route: "count",
    tenant: request.headers[INTERNAL_HEADERS.tenant] ?? "",
  }));
  app.get("/internal/v1/items/:id", { schema: { response } }, async (request) => ({
    route: "item",
    tenant: internalCaller(request).tenantId,
  }));
  app.post(
    "/internal/v1/items",
    { schema: { body: z.object({ name: z.string() }), response } },
    async (request) => ({ route: "create", tenant: internalCaller(request).tenantId }),
  );
  await app.ready();
});

afterAll(async () => {
  await app.close();
});

const identity = {
  [INTERNAL_HEADERS.tenant]: "ten_a",
  [INTERNAL_HEADERS.member]: "mem_a",
  [INTERNAL_HEADERS.key]: "key_a",
};

describe("signed internal calls", () => {
  it("answer a call the gateway signed, with the identity it signed", async () => {
    const response = await app.inject(
      signedInject(app, RECEIVER, {
        method: "GET",
        url: "/internal/v1/items/i1",
        headers: identity,
      }),
    );
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ route: "item", tenant: "ten_a" });
  });

  it("refuse a call with no signature, or with the shared token of old", async () => {
    for (const headers of [identity, { ...identity, "x-th-internal-token": "x".repeat(32) }]) {
      const response = await app.inject({ method: "GET", url: "/internal/v1/items/i1", headers });
      expect(response.statusCode).toBe(401);
      expect(response.json()).toMatchObject({ error: "unauthorized" });
    }
  });

  it("refuse a percent-encoded path exactly as the plain one: the route decides, not the URL", async () => {
    for (const url of [
      "/%69nternal/v1/items/i1",
      "/internal/%76%31/items/i1",
      "/inter%6Eal/v1/items/count",
    ]) {
      const response = await app.inject({ method: "GET", url, headers: identity });
      expect(response.statusCode, url).toBe(401);
    }
  });

  it("refuse a caller this service does not accept and a key derived for another service", async () => {
    const strangers = [
      { caller: "webhook-dispatcher" as const },
      { root: "a-root-of-the-attackers-own-making-000000" },
    ];
    for (const stranger of strangers) {
      const response = await app.inject(
        signedInject(app, RECEIVER, { method: "GET", url: "/internal/v1/items/i1", ...stranger }),
      );
      expect(response.statusCode).toBe(401);
    }
    // The gateway's key for the keys service, presented here.
    const headers = signedHeaders("keys", { method: "GET", url: "/internal/v1/items/i1" }, app);
    const response = await app.inject({ method: "GET", url: "/internal/v1/items/i1", headers });
    expect(response.statusCode).toBe(401);
  });

  it("refuse a captured call replayed, even while its signature is fresh", async () => {
    const headers = signedHeaders(
      RECEIVER,
      { method: "GET", url: "/internal/v1/items/i1", headers: identity },
      app,
    );
    const first = await app.inject({ method: "GET", url: "/internal/v1/items/i1", headers });
    const replay = await app.inject({ method: "GET", url: "/internal/v1/items/i1", headers });
    expect(first.statusCode).toBe(200);
    expect(replay.statusCode).toBe(401);
    expect(replay.json().detail).toMatch(/replay/);
  });

  it("refuse a captured call whose body, identity, method or path was altered", async () => {
    const call = {
      method: "POST",
      url: "/internal/v1/items",
      body: { name: "a" },
      headers: identity,
    };
    const headers = signedHeaders(RECEIVER, call, app);
    const altered = [
      { method: "POST" as const, url: call.url, headers, payload: { name: "b" } },
      {
        method: "POST" as const,
        url: call.url,
        headers: { ...headers, [INTERNAL_HEADERS.tenant]: "ten_victim" },
        payload: call.body,
      },
      { method: "POST" as const, url: `${call.url}?extra=1`, headers, payload: call.body },
      { method: "GET" as const, url: "/internal/v1/items/i1", headers },
    ];
    for (const request of altered) {
      const response = await app.inject(request);
      expect(response.statusCode, JSON.stringify(request.payload)).toBe(401);
    }
  });

  it("refuse a call signed more than the window ago or ahead", async () => {
    for (const at of [Date.now() - 31_000, Date.now() + 31_000]) {
      const response = await app.inject(
        signedInject(app, RECEIVER, { method: "GET", url: "/internal/v1/items/i1", at }),
      );
      expect(response.statusCode).toBe(401);
      expect(response.json().detail).toMatch(/expired/);
    }
  });

  it("never let a parameter reach another route: `count` signed for `:id` is refused, not counted", async () => {
    const response = await app.inject(
      signedInject(app, RECEIVER, {
        method: "GET",
        url: "/internal/v1/items/count",
        route: "/internal/v1/items/:id",
        headers: identity,
      }),
    );
    expect(response.statusCode).toBe(401);
    expect(response.json().detail).toMatch(/another route/);
    expect(response.body).not.toContain('"count"');
  });

  it("hold for every spelling of every route: escaped characters meet the same check or a 404", async () => {
    const paths = ["/internal/v1/items/count", "/internal/v1/items/i1", "/internal/v1/items"];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...paths),
        fc.array(fc.nat(), { maxLength: 6 }),
        fc.boolean(),
        async (path, positions, lowerHex) => {
          const url = percentEscapeAt(path, positions, lowerHex);
          const response = await app.inject({ method: "GET", url, headers: identity });
          expect([401, 404, 405]).toContain(response.statusCode);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("NonceMemory", () => {
  it("remembers a nonce for two windows after it is first seen, whenever the memory rotates", () => {
    const memory = new NonceMemory(1000, 0);
    expect(memory.firstSight("a", 1999)).toBe(true);
    expect(memory.firstSight("a", 2000)).toBe(false);
    expect(memory.firstSight("a", 3998)).toBe(false);
    expect(memory.firstSight("b", 0)).toBe(true);
    expect(memory.firstSight("b", 9000)).toBe(true);
  });
});
