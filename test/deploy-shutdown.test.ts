// Graceful shutdown as Kubernetes does it: a real service process (the quota ledger) gets
// SIGTERM while it has consumed records and holds an HTTP request in flight. Readiness turns
// 503 "draining" at once, the request still gets its answer, the process exits 0, and its
// consumer group has committed everything it processed (committed offset = high-water mark).
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer, Socket } from "node:net";
import { join } from "node:path";
import { Bus } from "@th/bus";
import { contracts } from "@th/contracts";
import { leadViewRecorded } from "@th/contracts/samples";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { type RunningBroker, startBroker } from "@th/dev-broker";
import { createLogger } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations } from "../services/quota-ledger/src/db/migrations.ts";

const root = join(import.meta.dirname, "..");
const LEDGER_GROUP = "quota-ledger.ledger";
const RECORDS = 60;

let broker: RunningBroker;
let db: TestDatabase;
let bus: Bus;
let child: ChildProcess | undefined;
let output = "";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  broker = await startBroker({ port: 0, logLevel: "warn" });
  db = await createTestDatabase([migrations]);
  bus = new Bus({
    brokers: [`127.0.0.1:${broker.port}`],
    clientId: "shutdown-test",
    logger: createLogger({ service: "shutdown-test", level: "warn" }),
  });
  // What the deploy's topics hook does before any service starts.
  await bus.provision([
    contracts.leadViewRecorded,
    contracts.leadViewVoided,
    contracts.tenantChanged,
  ]);
});

afterAll(async () => {
  child?.kill("SIGKILL");
  await bus?.close();
  await broker?.stop();
  await db?.drop();
});

describe("graceful shutdown on SIGTERM", () => {
  it("turns readiness to draining, answers the request in flight, commits offsets and exits 0", async () => {
    const [port, internalPort] = [await freePort(), await freePort()];
    child = spawn(process.execPath, ["services/quota-ledger/src/main.ts"], {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: db.url,
        KAFKA_BROKERS: `127.0.0.1:${broker.port}`,
        PORT: String(port),
        INTERNAL_PORT: String(internalPort),
        HOST: "127.0.0.1",
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout?.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr?.on("data", (chunk) => {
      output += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child?.once("exit", resolve));
    const readyz = `http://127.0.0.1:${internalPort}/readyz`;
    await until("readiness", async () => ((await fetch(readyz)).ok ? true : undefined), 60_000);

    // Lead-views of several tenants, so several partitions have work.
    const run = randomBytes(4).toString("hex");
    await bus.publish(
      contracts.leadViewRecorded,
      Array.from({ length: RECORDS }, (_, index) => ({
        ...leadViewRecorded,
        tenant_id: `ten_${run}_${index % 7}`,
        folio: `23-${run}-${index}`,
        request_id: `req_${run}_${index}`,
      })),
    );
    await until("the ledger to record every view", async () => {
      const { rows } = await db.pool.query<{ count: string }>(
        "SELECT count(*) FROM quota_ledger.lead_views WHERE request_id LIKE $1",
        [`req_${run}_%`],
      );
      return Number(rows[0]?.count) === RECORDS ? true : undefined;
    });

    // A request in flight: headers and half the body sent, the rest only after SIGTERM.
    const socket = new Socket();
    await new Promise<void>((resolve) => socket.connect(port, "127.0.0.1", resolve));
    let response = "";
    socket.on("data", (chunk) => {
      response += chunk;
    });
    const answered = new Promise<void>((resolve) => socket.once("end", resolve));
    const body = JSON.stringify({ in_flight: true });
    socket.write(
      `POST /internal/v1/in-flight HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body.slice(0, 5)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(response).toBe("");

    child.kill("SIGTERM");
    const draining = await until("readiness to turn draining", async () => {
      const probe = await fetch(readyz);
      const answer = (await probe.json()) as { status: string };
      return probe.status === 503 && answer.status === "draining" ? answer : undefined;
    });
    expect(draining.status).toBe("draining");

    socket.end(body.slice(5));
    await answered;
    expect(response).toMatch(/^HTTP\/1\.1 404 /);
    expect(response).toContain('"error"');

    expect(await exited).toBe(0);
    expect(output).not.toMatch(/"level":(50|60)/);

    const committed = await bus.committedOffsets(LEDGER_GROUP, contracts.leadViewRecorded.topic);
    const highWaterMarks = await bus.highWaterMarks(contracts.leadViewRecorded.topic);
    let total = 0;
    for (const [partition, high] of highWaterMarks) {
      total += Number(high);
      if (high !== "0") {
        expect(committed.get(partition), `partition ${partition}`).toBe(high);
      }
    }
    expect(total).toBe(RECORDS);
  }, 90_000);
});
