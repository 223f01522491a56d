// `npm start` as a user runs it (minus the bootstrap): the supervisor brings up the dev broker
// and all seven services, every readiness probe turns green, the public health endpoint answers,
// and one SIGINT stops every process.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serverUrl } from "@th/db/testing";
import { GATEWAY_NODE_FLAGS } from "@th/gateway/heap";
import { verifySignature } from "@th/webhooks";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { internalPortsOf, portEnv, stackPorts } from "./support/service-ports.ts";

const root = join(import.meta.dirname, "..");
const ports = stackPorts();
const internalPorts = internalPortsOf(ports);
// The gateway owns no Postgres schema, so its readiness does not wait on Postgres.
const storelessPorts = new Set([ports.GATEWAY_INTERNAL_PORT]);
/** The services that keep nothing in Redis, and so do not wait on it to be ready. */
const redislessPorts = new Set([
  ports.KEYS_INTERNAL_PORT,
  ports.PARCELS_INTERNAL_PORT,
  ports.MATCHER_INTERNAL_PORT,
  ports.PIPELINE_INTERNAL_PORT,
]);

let supervisor: ChildProcess | undefined;
let output = "";
// A database of its own, so the run neither sees nor leaves data in the development database.
const database = `th_start_${randomBytes(5).toString("hex")}`;
const databaseUrl = (() => {
  const url = new URL(serverUrl());
  url.pathname = `/${database}`;
  return url.toString();
})();

async function admin(sql: string) {
  const client = new pg.Client({ connectionString: serverUrl() });
  await client.connect();
  await client.query(sql);
  await client.end();
}

function commandLineOf(pid: string): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(0, -1);
}

/** The gateway process the supervisor started on this port (read from /proc, as `ps` would). */
function gatewayProcess(port: number): string {
  const found = readdirSync("/proc").filter((pid) => {
    try {
      return (
        commandLineOf(pid).at(-1)?.endsWith("services/gateway/src/main.ts") === true &&
        readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes(`PORT=${port}`)
      );
    } catch {
      return false;
    }
  });
  expect(found).toHaveLength(1);
  return found[0] as string;
}

beforeAll(() => admin(`CREATE DATABASE ${database}`));
afterAll(async () => {
  // After a failure half-way: the supervisor stops its services (each in a group of its own).
  const running = supervisor;
  if (running?.pid !== undefined && running.exitCode === null) {
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill("SIGTERM");
    const timer = setTimeout(() => running.kill("SIGKILL"), 30_000);
    await exited;
    clearTimeout(timer);
  }
  await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
});

function waitForOutput(pattern: RegExp, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`timed out waiting for ${pattern}:\n${output}`)),
      timeoutMs,
    );
    const check = () => {
      if (pattern.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    supervisor?.stdout?.on("data", check);
    check();
  });
}

/** A local receiver on plain HTTP gets the signed deliveries of a manual run of a watchlist. */
async function expectLoopbackDeliveries(baseUrl: string, key: string) {
  const received: { body: string; signature: string }[] = [];
  const receiver = createHttpServer((request, response) => {
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => {
      body += chunk;
    });
    request.on("end", () => {
      received.push({ body, signature: String(request.headers["x-flpf-signature"]) });
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  try {
    const call = async (path: string, body: unknown) => {
      const response = await fetch(`${baseUrl}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      expect(response.status, `${path}: ${text}`).toBeLessThan(300);
      return JSON.parse(text) as Record<string, unknown>;
    };
    const watchlist = await call("/v1/watchlists", {
      name: "local receiver",
      recipe: { filters: { counties: [23] } },
    });
    const port = (receiver.address() as AddressInfo).port;
    const endpoint = await call(`/v1/watchlists/${watchlist.id}/webhooks`, {
      url: `http://127.0.0.1:${port}/hooks`,
      events: ["watchlist.match"],
    });
    await call(`/v1/watchlists/${watchlist.id}/run`, {});
    const deadline = Date.now() + 60_000;
    while (received.length === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(received.length).toBeGreaterThan(0);
    const first = received[0] as { body: string; signature: string };
    expect(verifySignature(first.body, first.signature, [endpoint.secret as string]).ok).toBe(true);
  } finally {
    await new Promise((resolve) => receiver.close(resolve));
  }
}

describe("npm start", () => {
  it("brings up the broker and all seven services, answers /v1/health, and stops on Ctrl-C", async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...portEnv(ports),
      BROKER_DATA_DIR: mkdtempSync(join(tmpdir(), "th-start-")),
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: "warn",
    };
    delete env.KAFKA_BROKERS;
    // A process group of its own, so the test can signal it the way a terminal's Ctrl-C does.
    supervisor = spawn(process.execPath, ["scripts/start.ts"], {
      cwd: root,
      env,
      stdio: "pipe",
      detached: true,
    });
    supervisor.stdout?.on("data", (chunk) => {
      output += chunk;
    });
    supervisor.stderr?.on("data", (chunk) => {
      output += chunk;
    });
    await waitForOutput(/Terminal House is up/, 90_000);

    for (const port of internalPorts) {
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`).catch((error: Error) => {
        throw new Error(`port ${port} did not answer (${error.message}); the run said:\n${output}`);
      });
      expect(ready.status).toBe(200);
      const { checks } = (await ready.json()) as { checks: Record<string, string> };
      expect(checks).toEqual({
        ...(storelessPorts.has(port) ? {} : { postgres: "ok" }),
        ...(redislessPorts.has(port) ? {} : { redis: "ok" }),
        kafka: "ok",
      });
    }
    const health = await fetch(`http://127.0.0.1:${ports.GATEWAY_PORT}/v1/health`, {
      headers: { authorization: "Bearer whatever" },
    });
    expect(health.status).toBe(200);
    expect(output).toContain(`http://127.0.0.1:${ports.GATEWAY_PORT}/v1/health`);
    // The gateway runs with the Node flags V8 reads only at startup.
    expect(commandLineOf(gatewayProcess(ports.GATEWAY_PORT))).toEqual([
      process.execPath,
      ...GATEWAY_NODE_FLAGS,
      join("services", "gateway", "src", "main.ts"),
    ]);

    // The printed demo key reads leads of the sample roll.
    const key = /API key\s+(th_live_\w+)/.exec(output)?.[1];
    expect(key).toBeDefined();
    const leads = await fetch(`http://127.0.0.1:${ports.GATEWAY_PORT}/v1/leads?county=23&limit=3`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(leads.status).toBe(200);
    expect(((await leads.json()) as { leads: unknown[] }).leads).toHaveLength(3);

    // Webhooks on a developer's machine: a plain-HTTP loopback receiver is subscribed, and a
    // manual run reaches it with real signed deliveries, no tunnel needed; the run says so.
    expect(output).toMatch(/plain-HTTP loopback URL .* for local development only/);
    // Trials are confirmed by the built-in card processor, and the run says so.
    expect(output).toMatch(
      /Payments {6}the built-in test processor \(PAYMENT_PROVIDER=local\).*production refuses it/,
    );
    await expectLoopbackDeliveries(`http://127.0.0.1:${ports.GATEWAY_PORT}`, key as string);

    // Ctrl-C: SIGINT to every process of the terminal's foreground group at once. The services
    // hear of it once, from the supervisor, and drain before the broker stops.
    const exited = new Promise<number | null>((resolve) => supervisor?.once("exit", resolve));
    process.kill(-(supervisor.pid as number), "SIGINT");
    expect(await exited).toBe(0);
    expect(output).not.toContain("second signal");
    expect(output).not.toContain("ECONNREFUSED");
    for (const port of [...internalPorts, ports.GATEWAY_PORT]) {
      await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    }
  }, 150_000);
  it("refuses to start when a port it needs is taken, and says which and how to choose another", async () => {
    // Other ports than the run above, one of them held by a listener of the test's own.
    const shift = 100;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...portEnv(ports, shift),
      DATABASE_URL: databaseUrl,
    };
    delete env.KAFKA_BROKERS;
    const holder = createServer();
    const held = ports.PARCELS_PORT + shift;
    await new Promise<void>((resolve) => holder.listen(held, "127.0.0.1", resolve));
    try {
      const second = spawn(process.execPath, ["scripts/start.ts"], {
        cwd: root,
        env,
        stdio: "pipe",
      });
      let said = "";
      second.stdout?.on("data", (chunk) => {
        said += chunk;
      });
      const code = await new Promise<number | null>((resolve) => second.once("exit", resolve));
      expect(code).toBe(1);
      expect(said).toContain(`port ${held} (parcels) is in use`);
      expect(said).toContain("choose another with PARCELS_PORT");
      expect(said).not.toContain("applying migrations");
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  }, 30_000);
});
