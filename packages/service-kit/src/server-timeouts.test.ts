// Slow clients against a real listening server: headers dribbled a byte at a time, a body that
// never ends, a kept-alive connection left idle. Each must be cut off within its bound, and an
// answer that streams for longer than the request bound must still arrive whole.
import { connect, type Socket } from "node:net";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { createLogger } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHttpApp, type HttpApp } from "./app.ts";
import { type InternalServer, startInternalServer } from "./internal-server.ts";
import { applyServerTimeouts, type ServerTimeouts } from "./server-timeouts.ts";

const TIMEOUTS: ServerTimeouts = { headersMs: 1_000, requestMs: 1_500, keepAliveMs: 500 };
// Node looks for late requests once a second (applyServerTimeouts), and keeps an idle socket
// open a second past the keep-alive it announces (keepAliveTimeoutBuffer); some slack on top for
// a loaded machine.
const CHECK_MS = 1_000;
const SLACK_MS = 1_000;

let app: HttpApp;
let appPort: number;
let probes: InternalServer;

beforeAll(async () => {
  app = await createHttpApp({
    logger: createLogger({ service: "timeouts-test", level: "silent" }),
    title: "timeouts test",
  });
  app.get("/ping", async () => ({ ok: true }));
  app.post("/echo", async (request) => ({ got: request.body }));
  // Twelve chunks 250 ms apart: three seconds of answer, twice the request bound.
  app.get("/stream", async (_request, reply) =>
    reply.type("text/plain").send(
      Readable.from(
        (async function* () {
          for (let index = 0; index < 12; index++) {
            await sleep(250);
            yield `line ${index}\n`;
          }
        })(),
      ),
    ),
  );
  applyServerTimeouts(app.server, TIMEOUTS);
  await app.listen({ port: 0, host: "127.0.0.1" });
  appPort = (app.server.address() as { port: number }).port;
  probes = await startInternalServer({
    port: 0,
    host: "127.0.0.1",
    checks: {},
    timeouts: TIMEOUTS,
  });
});
afterAll(async () => {
  await app.close();
  await probes.close();
});

interface Outcome {
  /** Milliseconds from the connection until the server closed it. */
  closedAfterMs: number;
  /** Everything the server wrote before closing. */
  received: string;
}

/** Connects, runs `drive` on the socket, and resolves when the server closes it. */
function slowClient(port: number, drive: (socket: Socket) => void): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let received = "";
    const socket = connect(port, "127.0.0.1", () => drive(socket));
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      received += chunk;
    });
    socket.on("error", () => {});
    socket.on("close", () => resolve({ closedAfterMs: Date.now() - started, received }));
    setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for 15 s; it wrote: ${received}`));
    }, 15_000).unref();
  });
}

/** Writes `text` a byte every `everyMs` while the socket is open. */
async function dribble(socket: Socket, text: string, everyMs: number): Promise<void> {
  for (const byte of text) {
    if (socket.destroyed || !socket.writable) {
      return;
    }
    socket.write(byte);
    await sleep(everyMs);
  }
}

/** A header block that takes a minute at one byte every 250 ms: it never finishes in time. */
const ENDLESS_HEADERS = `GET /ping HTTP/1.1\r\nHost: a\r\nX-Slow: ${"a".repeat(240)}\r\n\r\n`;

describe("HTTP server timeouts against slow clients", () => {
  it("cut off a client that sends its headers a byte at a time, once the headers bound has passed", async () => {
    const outcome = await slowClient(appPort, (socket) => {
      void dribble(socket, ENDLESS_HEADERS, 250);
    });
    expect(outcome.closedAfterMs).toBeGreaterThanOrEqual(TIMEOUTS.headersMs - 100);
    expect(outcome.closedAfterMs).toBeLessThan(TIMEOUTS.headersMs + CHECK_MS + SLACK_MS);
    expect(outcome.received).toMatch(/^HTTP\/1\.1 408 /);
    expect(outcome.received).toContain('"error":"request_timeout"');
  });

  it("cut off a client whose body never finishes, once the request bound has passed", async () => {
    const outcome = await slowClient(appPort, (socket) => {
      socket.write(
        "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n",
      );
      void dribble(socket, `{"a":"${"b".repeat(150)}`, 250);
    });
    expect(outcome.closedAfterMs).toBeGreaterThanOrEqual(TIMEOUTS.requestMs - 100);
    expect(outcome.closedAfterMs).toBeLessThan(TIMEOUTS.requestMs + CHECK_MS + SLACK_MS);
    expect(outcome.received).toMatch(/^HTTP\/1\.1 408 /);
    expect(outcome.received).toContain('"error":"request_timeout"');
  });

  it("close a kept-alive connection left idle after its answer, once the keep-alive bound has passed", async () => {
    let answeredAt = 0;
    const started = Date.now();
    const outcome = await slowClient(appPort, (socket) => {
      socket.on("data", () => {
        answeredAt ||= Date.now();
      });
      socket.write("GET /ping HTTP/1.1\r\nHost: a\r\n\r\n");
    });
    expect(outcome.received).toMatch(/^HTTP\/1\.1 200 /);
    const idleMs = outcome.closedAfterMs - (answeredAt - started);
    expect(idleMs).toBeGreaterThanOrEqual(TIMEOUTS.keepAliveMs - 100);
    expect(idleMs).toBeLessThan(TIMEOUTS.keepAliveMs + CHECK_MS + SLACK_MS);
  });

  it("do not cut an answer that streams for longer than the request bound", async () => {
    const started = Date.now();
    const response = await fetch(`http://127.0.0.1:${appPort}/stream`);
    const body = await response.text();
    expect(Date.now() - started).toBeGreaterThan(TIMEOUTS.requestMs * 1.5);
    expect(body.trim().split("\n")).toHaveLength(12);
    expect(body).toContain("line 11\n");
  });

  it("cut off a slow client of the probes server too", async () => {
    const outcome = await slowClient(probes.port, (socket) => {
      void dribble(socket, ENDLESS_HEADERS.replace("/ping", "/healthz"), 250);
    });
    expect(outcome.closedAfterMs).toBeLessThan(TIMEOUTS.headersMs + CHECK_MS + SLACK_MS);
  });

  it("refuse a headers bound longer than the request bound, and a server already listening", async () => {
    const fresh = await createHttpApp({
      logger: createLogger({ service: "timeouts-test", level: "silent" }),
      title: "fresh",
    });
    expect(() =>
      applyServerTimeouts(fresh.server, { headersMs: 5_000, requestMs: 1_000, keepAliveMs: 1 }),
    ).toThrow(/headers timeout/);
    expect(() => applyServerTimeouts(app.server, TIMEOUTS)).toThrow(/before the server listens/);
    await fresh.close();
  });
});
