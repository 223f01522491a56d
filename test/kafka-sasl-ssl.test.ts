// The whole system on a secured Kafka: every service (as `npm start` runs them, each a process of
// its own) and the ingest CLI connect over TLS with SCRAM-SHA-512 to a SASL_SSL listener of the
// dev broker, set only by the KAFKA_* environment. A roll is ingested, the matcher matches it, the
// dispatcher delivers a signed webhook to a receiver, the lead-view lands on the ledger, and the
// ledger rebuild replays it. No process may print the password. A wrong password stops a service
// and the CLI in one line.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { serverUrl } from "@th/db/testing";
import { type RunningBroker, startBroker } from "@th/dev-broker";
import { makeTestCertificates, type TestCertificates } from "@th/dev-broker/testing";
import { writeNalFile } from "@th/parcels/generate";
import { verifySignature } from "@th/webhooks";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { internalPortsOf, portEnv, stackPorts } from "./support/service-ports.ts";
import { type Receiver, startReceiver } from "./support/webhook-stack.ts";

const root = join(import.meta.dirname, "..");
const PASSWORD = `scram-${randomBytes(12).toString("hex")}`;
const USER = "terminal-house";
const ports = stackPorts();
const gateway = `http://127.0.0.1:${ports.GATEWAY_PORT}`;
const database = `th_sasl_${randomBytes(5).toString("hex")}`;
const databaseUrl = (() => {
  const url = new URL(serverUrl());
  url.pathname = `/${database}`;
  return url.toString();
})();

let pki: TestCertificates;
let broker: RunningBroker;
let receiver: Receiver;
let supervisor: ChildProcess | undefined;
let output = "";
let env: NodeJS.ProcessEnv;

async function admin(sql: string) {
  const client = new pg.Client({ connectionString: serverUrl() });
  await client.connect();
  await client.query(sql);
  await client.end();
}

/** Runs a command of the project to its end with `extra` over the test's environment. */
function runToEnd(
  args: string[],
  extra: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; said: string; ms: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: { ...env, ...extra },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let said = "";
  child.stdout.on("data", (chunk) => {
    said += chunk;
  });
  child.stderr.on("data", (chunk) => {
    said += chunk;
  });
  return new Promise((resolve) =>
    child.once("exit", (code) => resolve({ code, said, ms: Date.now() - started })),
  );
}

beforeAll(async () => {
  pki = makeTestCertificates();
  broker = await startBroker({
    port: 0,
    securityProtocol: "SASL_SSL",
    tls: { key: pki.serverKey, cert: pki.serverCert },
    sasl: { mechanisms: ["SCRAM-SHA-512"], users: { [USER]: PASSWORD } },
  });
  const passwordFile = join(pki.dir, "kafka-password");
  await writeFile(passwordFile, `${PASSWORD}\n`);
  await admin(`CREATE DATABASE ${database}`);
  receiver = await startReceiver();
  env = {
    ...process.env,
    ...portEnv(ports),
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: "info",
    WEBHOOK_ALLOW_LOOPBACK_HTTP: "true",
    KAFKA_BROKERS: broker.brokers.join(","),
    KAFKA_TLS: "true",
    KAFKA_TLS_CA_FILE: pki.caFile,
    KAFKA_SASL_MECHANISM: "scram-sha-512",
    KAFKA_SASL_USERNAME: USER,
    KAFKA_SASL_PASSWORD_FILE: passwordFile,
  };
  delete env.KAFKA_SASL_PASSWORD;
}, 60_000);

afterAll(async () => {
  const running = supervisor;
  if (running?.pid !== undefined && running.exitCode === null) {
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill("SIGTERM");
    const timer = setTimeout(() => running.kill("SIGKILL"), 30_000);
    await exited;
    clearTimeout(timer);
  }
  await receiver?.close();
  await broker?.stop();
  await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  pki?.remove();
}, 60_000);

async function api(method: string, path: string, key: string | undefined, body?: unknown) {
  const response = await fetch(`${gateway}${path}`, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, text, json: () => JSON.parse(text) };
}

describe("the whole system over SASL_SSL with SCRAM-SHA-512", () => {
  it("ingests, matches, delivers a signed webhook, records the lead-view on the ledger and rebuilds it", async () => {
    supervisor = spawn(process.execPath, ["scripts/start.ts"], {
      cwd: root,
      env,
      stdio: "pipe",
      detached: true,
    });
    for (const stream of [supervisor.stdout, supervisor.stderr]) {
      stream?.on("data", (chunk) => {
        output += chunk;
      });
    }
    // The supervisor's demo seeding already ran the ingest CLI once, over the same settings.
    // A service that refuses the settings ends the run at once; say so then, not at the timeout.
    const running = supervisor;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`npm start not up:\n${output}`)), 150_000);
      const check = () => {
        if (output.includes("Terminal House is up")) {
          clearTimeout(timer);
          resolve();
        }
      };
      running.stdout?.on("data", check);
      running.once("exit", () => {
        clearTimeout(timer);
        reject(new Error(`npm start exited:\n${output}`));
      });
    });
    expect(output).not.toContain("could not be created");

    const trial = await api("POST", "/v1/public/trials", undefined, {
      tier: "operator",
      company: "Secure Realty LLC",
      admin_email: "owner@secure-realty.example",
      payment_method: "pm_card_visa",
    });
    expect(trial.status, trial.text).toBe(201);
    const key = trial.json().api_key.secret as string;

    const watchlist = await api("POST", "/v1/watchlists", key, {
      name: "Everything in Broward",
      recipe: { filters: { counties: [23] }, min_score: 0 },
    });
    expect(watchlist.status, watchlist.text).toBe(201);
    const watchlistId = watchlist.json().id as string;

    // The dispatcher learns the tenant's tier from tenant.changed (over SASL_SSL) first.
    let secret = "";
    await vi.waitFor(
      async () => {
        const endpoint = await api("POST", `/v1/watchlists/${watchlistId}/webhooks`, key, {
          url: receiver.url,
          events: ["watchlist.match"],
        });
        expect(endpoint.status, endpoint.text).toBe(201);
        secret = endpoint.json().secret;
      },
      { timeout: 30_000, interval: 250 },
    );

    const roll = join(pki.dir, "NAL23F202502.csv");
    await writeNalFile(roll, { rows: 20, seed: 30, countyNo: 23 });
    const ingest = await runToEnd(["services/parcels/src/ingest/cli.ts", "--no-rejects", roll]);
    expect(ingest.code, ingest.said).toBe(0);

    await vi.waitFor(() => expect(receiver.received.length).toBeGreaterThan(0), {
      timeout: 60_000,
      interval: 100,
    });
    const delivery = receiver.received[0];
    expect(delivery?.eventType).toBe("watchlist.match");
    expect(verifySignature(delivery?.body ?? "", delivery?.signature ?? "", [secret]).ok).toBe(
      true,
    );

    // The delivered lead counts against the tenant on the quota ledger.
    await vi.waitFor(
      async () => {
        const usage = await api("GET", "/v1/usage", key);
        expect(usage.status, usage.text).toBe(200);
        expect(usage.json().used).toBeGreaterThan(0);
      },
      { timeout: 30_000, interval: 250 },
    );

    // The ledger rebuild replays the lead-view topic through the bus's own log reader, over the
    // same settings, and finds the ledger equal to it.
    const rebuild = await runToEnd(["services/quota-ledger/src/main.ts", "rebuild"]);
    expect(rebuild.code, rebuild.said).toBe(0);
    expect(rebuild.said).not.toContain(PASSWORD);

    // Every process's log and the CLI's output, without the password anywhere.
    expect(output).not.toContain(PASSWORD);
    expect(ingest.said).not.toContain(PASSWORD);
    for (const port of internalPortsOf(ports)) {
      const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(await metrics.text()).not.toContain(PASSWORD);
    }
  }, 240_000);

  it("stops a service, the ingest CLI and the ledger rebuild at start in one line naming the setting", async () => {
    const wrong = { KAFKA_SASL_PASSWORD_FILE: "", KAFKA_SASL_PASSWORD: "wrong-password-123456" };
    const service = await runToEnd(["services/matcher/src/main.ts"], {
      ...wrong,
      PORT: "0",
      INTERNAL_PORT: "0",
    });
    expect(service.code).toBe(1);
    expect(service.ms).toBeLessThan(20_000);
    const lines = service.said.trim().split("\n");
    expect(lines, service.said).toHaveLength(1);
    expect(lines[0]).toContain("KAFKA_SASL_PASSWORD");
    expect(lines[0]).toContain("SASL_AUTHENTICATION_FAILED");
    expect(service.said).not.toContain("wrong-password-123456");
    expect(service.said).not.toContain(PASSWORD);

    // A setting that is wrong on its own face stops it before any connection, in one line too.
    const unknown = await runToEnd(["services/matcher/src/main.ts"], {
      KAFKA_SASL_MECHANISM: "gssapi",
      PORT: "0",
      INTERNAL_PORT: "0",
    });
    expect(unknown.code).toBe(1);
    expect(unknown.said).toBe(
      "invalid configuration: KAFKA_SASL_MECHANISM: must be one of plain, scram-sha-256, scram-sha-512\n",
    );

    const roll = join(pki.dir, "NAL23F202503.csv");
    await writeNalFile(roll, { rows: 5, seed: 31, countyNo: 23 });
    const cli = await runToEnd(["services/parcels/src/ingest/cli.ts", "--no-rejects", roll], wrong);
    expect(cli.code).toBe(1);
    expect(cli.said.trim().split("\n"), cli.said).toHaveLength(1);
    expect(cli.said).toContain("Kafka connection failed: KAFKA_SASL_PASSWORD: 127.0.0.1:");
    expect(cli.said).not.toContain("wrong-password-123456");

    const rebuild = await runToEnd(["services/quota-ledger/src/main.ts", "rebuild"], wrong);
    expect(rebuild.code).toBe(2);
    expect(rebuild.said.trim().split("\n"), rebuild.said).toHaveLength(1);
    expect(rebuild.said).toContain(
      "rebuild not started: Kafka connection failed: KAFKA_SASL_PASSWORD: 127.0.0.1:",
    );
    expect(rebuild.said).not.toContain("wrong-password-123456");
  }, 90_000);
});
