import { connect } from "node:net";
import { createLogger } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createHttpApp, type HttpApp, holdsNul } from "./app.ts";
import { ApiError, errorResponses } from "./errors.ts";
import { startInternalServer } from "./internal-server.ts";

let app: HttpApp;

beforeAll(async () => {
  app = await createHttpApp({
    logger: createLogger({ service: "kit-test", level: "silent" }),
    title: "kit test",
    bodyLimit: 1024,
  });
  app.post(
    "/things",
    {
      schema: {
        body: z.object({ name: z.string().min(1), count: z.number().int().positive() }),
        response: { 201: z.object({ id: z.string() }), ...errorResponses() },
      },
    },
    async (request, reply) => reply.status(201).send({ id: `t_${request.body.name}` }),
  );
  app.post(
    "/strict-things",
    {
      schema: {
        body: z.strictObject({ name: z.string() }),
        response: { 201: z.object({ id: z.string() }), ...errorResponses() },
      },
    },
    async (request, reply) => reply.status(201).send({ id: `t_${request.body.name}` }),
  );
  app.get(
    "/things/:name",
    {
      schema: {
        params: z.object({ name: z.string() }),
        querystring: z.object({ q: z.string().optional() }),
      },
    },
    async (request) => ({ name: request.params.name }),
  );
  app.get("/boom", async () => {
    throw new Error("database password is hunter2 at /srv/app.ts:12");
  });
  app.get("/gone", async () => {
    throw new ApiError("tier_required", "webhooks need Operator", { upgrade_url: "https://x/up" });
  });
  await app.ready();
});
afterAll(() => app.close());

describe("error responses", () => {
  it("answer invalid bodies with 400 invalid_request naming each failing field", async () => {
    const response = await app.inject({
      method: "POST",
      url: "/things",
      payload: { name: "", count: 0 },
    });
    expect(response.statusCode).toBe(400);
    const body = response.json();
    expect(body.error).toBe("invalid_request");
    expect(body.fields.map((field: { path: string }) => field.path).sort()).toEqual([
      "body.count",
      "body.name",
    ]);
    expect(body.request_id).toMatch(/^req_/);
  });

  it("name each unknown field of a strict body, and call a body that is no object the body", async () => {
    const unknown = await app.inject({
      method: "POST",
      url: "/strict-things",
      payload: { name: "a", secret: "x", extra: 1 },
    });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().fields).toEqual([
      { path: "body.secret", message: "unknown field" },
      { path: "body.extra", message: "unknown field" },
    ]);
    const notAnObject = await app.inject({
      method: "POST",
      url: "/strict-things",
      payload: [1, 2],
    });
    expect(notAnObject.statusCode).toBe(400);
    expect(notAnObject.json().fields.map((field: { path: string }) => field.path)).toEqual([
      "body",
    ]);
  });

  it("answer malformed JSON with 400 and oversized bodies with 413", async () => {
    const malformed = await app.inject({
      method: "POST",
      url: "/things",
      headers: { "content-type": "application/json" },
      payload: "{nope",
    });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().error).toBe("invalid_request");
    const big = await app.inject({
      method: "POST",
      url: "/things",
      payload: { name: "x".repeat(5000), count: 1 },
    });
    expect(big.statusCode).toBe(413);
    expect(big.json().error).toBe("payload_too_large");
  });

  it("hide the cause of unexpected failures behind a 500 with no stack trace", async () => {
    const response = await app.inject({ method: "GET", url: "/boom" });
    expect(response.statusCode).toBe(500);
    expect(response.json().error).toBe("internal");
    expect(response.body).not.toContain("hunter2");
    expect(response.body).not.toContain("app.ts");
  });

  it("carry the extra fields of domain errors, such as upgrade_url on 403", async () => {
    const response = await app.inject({ method: "GET", url: "/gone" });
    expect(response.statusCode).toBe(403);
    expect(response.json()).toMatchObject({ error: "tier_required", upgrade_url: "https://x/up" });
  });

  it("answer a method a path does not take with 405 and the methods it does in Allow", async () => {
    const response = await app.inject({ method: "DELETE", url: "/things/abc?q=1" });
    expect(response.statusCode).toBe(405);
    expect(response.headers.allow).toBe("GET");
    expect(response.json()).toMatchObject({ error: "method_not_allowed" });
    const put = await app.inject({ method: "PUT", url: "/things" });
    expect(put.statusCode).toBe(405);
    expect(put.headers.allow).toBe("POST");
  });

  it("answer unknown routes with 404 not_found in the same shape", async () => {
    const response = await app.inject({ method: "GET", url: "/nowhere?x=1" });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({
      error: "not_found",
      detail: "no route for GET /nowhere",
    });
  });

  it("give each request its own id in x-request-id and the error body, or keep a sane incoming one", async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 50; i++) {
      const response = await app.inject({ method: "GET", url: "/nowhere" });
      expect(response.headers["x-request-id"]).toBe(response.json().request_id);
      ids.add(String(response.headers["x-request-id"]));
    }
    expect(ids.size).toBe(50);
    const traced = await app.inject({
      method: "GET",
      url: "/nowhere",
      headers: { "x-request-id": "upstream-id-1234" },
    });
    expect(traced.headers["x-request-id"]).toBe("upstream-id-1234");
    const hostile = await app.inject({
      method: "GET",
      url: "/nowhere",
      headers: { "x-request-id": "<script>" },
    });
    expect(hostile.headers["x-request-id"]).toMatch(/^req_[0-9a-f]{16}[0-9a-z]{6,}$/);
  });

  it("publish every route's schemas in the OpenAPI document", () => {
    const document = app.swagger() as { paths: Record<string, Record<string, unknown>> };
    expect(Object.keys(document.paths)).toContain("/things");
  });
});

describe("internal server", () => {
  it("reports ready only while every check passes and the service is not draining", async () => {
    let databaseUp = true;
    const server = await startInternalServer({
      port: 0,
      host: "127.0.0.1",
      checks: { postgres: async () => databaseUp },
    });
    const base = `http://127.0.0.1:${server.port}`;
    try {
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      databaseUp = false;
      const failing = await fetch(`${base}/readyz`);
      expect(failing.status).toBe(503);
      expect(await failing.json()).toMatchObject({ checks: { postgres: "failing" } });
      databaseUp = true;
      server.markDraining();
      const draining = await fetch(`${base}/readyz`);
      expect(draining.status).toBe(503);
      expect(await draining.json()).toMatchObject({ status: "draining" });
    } finally {
      await server.close();
    }
  });
});

describe("metrics", () => {
  it("are served in Prometheus text on the internal port", async () => {
    const { createMetrics } = await import("./metrics.ts");
    const metrics = createMetrics("kit-test");
    metrics.httpRequests.observe({ method: "GET", route: "/things", status: "200" }, 0.004);
    metrics.counter("th_test_events_total", "events", ["kind"] as const).inc({ kind: "a" });
    const server = await startInternalServer({ port: 0, host: "127.0.0.1", checks: {}, metrics });
    try {
      const response = await fetch(`http://127.0.0.1:${server.port}/metrics`);
      expect(response.headers.get("content-type")).toContain("text/plain");
      const text = await response.text();
      expect(text).toMatch(
        /th_http_request_duration_seconds_count\{[^}]*route="\/things"[^}]*status="200"[^}]*\} 1/,
      );
      expect(text).toMatch(/th_test_events_total\{[^}]*kind="a"[^}]*service="kit-test"[^}]*\} 1/);
      expect(text).toContain("process_cpu_seconds_total");
    } finally {
      await server.close();
    }
  });
});

describe("readiness as a metric", () => {
  it("th_ready reads 1 while /readyz would answer 200, 0 while a check fails or the service drains", async () => {
    const { createMetrics } = await import("./metrics.ts");
    const metrics = createMetrics("kit-ready");
    let redisUp = true;
    const server = await startInternalServer({
      port: 0,
      host: "127.0.0.1",
      checks: { redis: async () => redisUp },
      metrics,
    });
    const ready = async () =>
      (await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text()).match(
        /^th_ready\{[^}]*service="kit-ready"[^}]*\} (\d)$/m,
      )?.[1];
    try {
      expect(await ready()).toBe("1");
      redisUp = false;
      expect(await ready()).toBe("0");
      redisUp = true;
      expect(await ready()).toBe("1");
      server.markDraining();
      expect(await ready()).toBe("0");
    } finally {
      await server.close();
    }
  });
});

describe("NUL characters", () => {
  it("are refused with 400 invalid_request in a path, a query or a body, before any handler", async () => {
    for (const url of ["/things/a%00b", "/things/ok?q=%00"]) {
      const response = await app.inject({ method: "GET", url });
      expect(response.statusCode, url).toBe(400);
      expect(response.json()).toMatchObject({
        error: "invalid_request",
        detail: "the URL holds a NUL character (%00), which no parameter accepts",
      });
    }
    const body = await app.inject({
      method: "POST",
      url: "/things",
      payload: { name: "a\u0000b", count: 1 },
    });
    expect(body.statusCode).toBe(400);
    expect(body.json().detail).toBe(
      "the body holds a NUL character (\\u0000), which no field accepts",
    );
    const fine = await app.inject({ method: "GET", url: "/things/a%20b?q=0" });
    expect(fine.json()).toEqual({ name: "a b" });
  });

  it("are found in keys and values at any depth, and only there", () => {
    let deep: unknown = "x\u0000";
    for (let level = 0; level < 10_000; level++) {
      deep = [deep];
    }
    expect(holdsNul(deep)).toBe(true);
    expect(holdsNul({ list: [{ "k\u0000": 1 }] })).toBe(true);
    expect(holdsNul({ list: [{ k: "\\u0000 as text", n: 0, none: null }] })).toBe(false);
  });
});

describe("requests the router or the HTTP parser refuses", () => {
  it("get 400 invalid_request in the usual shape: a malformed escape", async () => {
    for (const url of ["/things/%FF", "/things/%C3%28", "/nothing/%C3%28?q=1"]) {
      const response = await app.inject({ method: "GET", url });
      expect(response.statusCode, url).toBe(400);
      expect(Object.keys(response.json()).sort(), url).toEqual(["detail", "error", "request_id"]);
      expect(response.json().error).toBe("invalid_request");
    }
  });

  it("get 400 invalid_request in the usual shape when the bytes are not HTTP", async () => {
    const address = await app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = new URL(address);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: "127.0.0.1", port: Number(port) });
      let received = "";
      socket.on("data", (chunk) => {
        received += chunk;
      });
      socket.on("end", () => resolve(received));
      socket.on("error", reject);
      // A Content-Length that is not a number.
      socket.write("POST /things HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n{}");
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    const requestId = /\r\nx-request-id: (\S+)\r\n/.exec(answer)?.[1];
    expect(requestId).toBeDefined();
    expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4))).toEqual({
      error: "invalid_request",
      detail: "the request is not valid HTTP/1.1",
      request_id: requestId,
    });
  });
});
