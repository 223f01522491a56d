// Requests during a store outage: a route whose Postgres or Redis is unreachable answers 503
// `unavailable` with Retry-After and the request id within about 2 s, never 500; readiness turns
// false in bounded time while liveness stays true.
import { createServer } from "node:net";
import { createPool, type Pool } from "@th/db";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { createLogger } from "@th/telemetry";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHttpApp, type HttpApp, toApiError } from "./app.ts";
import { errorResponses, unavailableStore } from "./errors.ts";
import { startInternalServer } from "./internal-server.ts";
import { outboxMigrations } from "./outbox.ts";
import { REDIS_OPTIONS } from "./run-service.ts";

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

let app: HttpApp;
let downRedis: Redis;
let downPool: Pool;
let db: TestDatabase;
let livePool: Pool;

beforeAll(async () => {
  const port = await closedPort();
  downRedis = new Redis({ host: "127.0.0.1", port, ...REDIS_OPTIONS });
  downRedis.on("error", () => {});
  downPool = createPool({ url: `postgres://postgres@127.0.0.1:${port}/none`, schema: "kit" });
  db = await createTestDatabase([{ schema: "outbox_test", dir: outboxMigrations.current }]);
  livePool = createPool({ url: db.url, schema: "kit", applicationName: "kit-outage-victim" });
  app = await createHttpApp({
    logger: createLogger({ service: "kit-outage-test", level: "silent" }),
    title: "kit outage test",
  });
  const reads = { response: { ...errorResponses("unavailable") } };
  app.get("/redis", { schema: reads }, async () => {
    await downRedis.get("anything");
  });
  app.get("/postgres", { schema: reads }, async () => {
    await downPool.query("SELECT 1");
  });
  // A connection held across a request whose server goes away mid-query.
  app.get("/terminated", { schema: reads }, async () => {
    const client = await livePool.connect();
    try {
      await client.query("SELECT pg_sleep(5)");
    } finally {
      client.release();
    }
  });
});

afterAll(async () => {
  await app?.close();
  downRedis?.disconnect();
  await downPool?.end();
  await livePool?.end();
  await db?.drop();
});

async function timedGet(url: string) {
  const started = Date.now();
  const response = await app.inject({ method: "GET", url });
  return { response, ms: Date.now() - started };
}

function expectUnavailable(response: Awaited<ReturnType<HttpApp["inject"]>>) {
  expect(response.statusCode).toBe(503);
  const body = response.json();
  expect(body.error).toBe("unavailable");
  expect(typeof body.detail).toBe("string");
  expect(body.detail).not.toMatch(/at .*\.ts:|ECONNREFUSED|127\.0\.0\.1/);
  expect(body.retry_after_seconds).toBeGreaterThan(0);
  expect(response.headers["retry-after"]).toBe(String(body.retry_after_seconds));
  expect(body.request_id).toBe(response.headers["x-request-id"]);
}

describe("a store outage during a request", () => {
  it("Redis refusing connections answers 503 unavailable with Retry-After within 2 s", async () => {
    const { response, ms } = await timedGet("/redis");
    expectUnavailable(response);
    expect(ms).toBeLessThan(2_000);
  });

  it("Postgres refusing connections answers 503 unavailable with Retry-After within 2 s", async () => {
    const { response, ms } = await timedGet("/postgres");
    expectUnavailable(response);
    expect(ms).toBeLessThan(2_000);
  });

  it("a backend terminated mid-query answers 503, and the process goes on", async () => {
    const pending = timedGet("/terminated");
    let terminated = 0;
    for (let i = 0; i < 50 && terminated === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const { rows } = await db.pool.query<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'kit-outage-victim'`,
      );
      terminated = rows[0]?.n ?? 0;
    }
    expect(terminated).toBe(1);
    const { response, ms } = await pending;
    expectUnavailable(response);
    expect(ms).toBeLessThan(3_000);
    // The pool discards the dead connection and answers again with a fresh one at once.
    const recovered = Date.now();
    for (;;) {
      const answer = await livePool.query("SELECT 1 AS one").catch(() => undefined);
      if (answer) {
        expect(answer.rows).toEqual([{ one: 1 }]);
        break;
      }
      expect(Date.now() - recovered).toBeLessThan(1_000);
    }
  });
});

describe("which errors mean an outage", () => {
  it("names the store for the errors Postgres, Redis and the broker give, and nothing else", () => {
    expect(unavailableStore(Object.assign(new Error("x"), { code: "57P01" }))).toBe("postgres");
    expect(unavailableStore(Object.assign(new Error("x"), { code: "57P03" }))).toBe("postgres");
    expect(unavailableStore(Object.assign(new Error("x"), { code: "08006" }))).toBe("postgres");
    expect(unavailableStore(new Error("Connection terminated unexpectedly"))).toBe("postgres");
    expect(
      unavailableStore(Object.assign(new Error("x"), { name: "MaxRetriesPerRequestError" })),
    ).toBe("redis");
    expect(unavailableStore(new Error("Connection is closed."))).toBe("redis");
    expect(unavailableStore(Object.assign(new Error("x"), { name: "BrokerConnectionError" }))).toBe(
      "kafka",
    );
    expect(
      unavailableStore(Object.assign(new Error("x"), { name: "ProduceError", retriable: true })),
    ).toBe("kafka");
    expect(unavailableStore(new Error("wrapper", { cause: { code: "ECONNREFUSED" } }))).toBe(
      "network",
    );
    // Statement errors and bugs are not outages.
    expect(unavailableStore(Object.assign(new Error("x"), { code: "23505" }))).toBeUndefined();
    expect(
      unavailableStore(Object.assign(new Error("x"), { name: "ProduceError", retriable: false })),
    ).toBeUndefined();
    expect(unavailableStore(new TypeError("undefined is not a function"))).toBeUndefined();
    expect(toApiError(new TypeError("boom")).status).toBe(500);
  });
});

describe("probes during an outage", () => {
  it("readiness answers 503 within its bound when a check hangs; liveness stays 200", async () => {
    const internal = await startInternalServer({
      port: 0,
      host: "127.0.0.1",
      checks: {
        postgres: () => new Promise<boolean>(() => {}),
        redis: async () => (await downRedis.ping()) === "PONG",
      },
      checkTimeoutMs: 500,
    });
    try {
      const started = Date.now();
      const ready = await fetch(`http://127.0.0.1:${internal.port}/readyz`);
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({
        status: "not_ready",
        checks: { postgres: "failing", redis: "failing" },
      });
      const live = await fetch(`http://127.0.0.1:${internal.port}/healthz`);
      expect(live.status).toBe(200);
    } finally {
      await internal.close();
    }
  });
});
