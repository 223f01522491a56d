// Readiness depends only on the stores a service uses. With Redis unreachable (REDIS_URL names a
// port nothing listens on), the real keys, matcher and parcels processes, which keep nothing in
// Redis, answer /readyz 200, and the gateway, whose edge lives in Redis, answers 503 naming it.
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { contracts } from "@th/contracts";
import { readConfig } from "@th/keys/config";
import { migrations as keysMigrations } from "@th/keys/migrations";
import { migrations as matcherMigrations } from "@th/matcher/migrations";
import { migrations as parcelsMigrations } from "@th/parcels/migrations";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const SERVICES = ["keys", "matcher", "parcels", "gateway"] as const;
type Service = (typeof SERVICES)[number];

let harness: TestHarness<ReturnType<typeof readConfig>>;
const children = new Map<Service, { process: ChildProcess; internalPort: number }>();
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

async function start(service: Service, redisUrl: string): Promise<void> {
  const [port, internalPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [`services/${service}/src/main.ts`], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: "development",
      DATABASE_URL: harness.db.url,
      KAFKA_BROKERS: harness.brokers.join(","),
      REDIS_URL: redisUrl,
      PORT: String(port),
      INTERNAL_PORT: String(internalPort),
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const collect = (chunk: Buffer) => {
    output += `[${service}] ${chunk}`;
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  children.set(service, { process: child, internalPort });
}

/** The service's /readyz answer once its internal server listens. */
async function readiness(service: Service): Promise<{ status: number; body: unknown }> {
  const internalPort = children.get(service)?.internalPort;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const response = await fetch(`http://127.0.0.1:${internalPort}/readyz`);
      return { status: response.status, body: await response.json() };
    } catch {
      if (Date.now() > deadline) {
        throw new Error(`${service} never answered /readyz:\n${output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [keysMigrations, matcherMigrations, parcelsMigrations],
    topics: [
      contracts.tenantChanged,
      contracts.keyIssued,
      contracts.keyRevoked,
      contracts.parcelIngested,
      contracts.matchFound,
      contracts.leadViewRecorded,
      contracts.leadViewVoided,
    ],
  });
  // A port that was free a moment ago: nothing answers Redis there.
  const unreachableRedis = `redis://127.0.0.1:${await freePort()}`;
  for (const service of SERVICES) {
    await start(service, unreachableRedis);
  }
}, 90_000);

afterAll(async () => {
  await Promise.all(
    [...children.values()].map(
      ({ process: child }) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null) {
            resolve();
            return;
          }
          child.once("exit", () => resolve());
          child.kill("SIGKILL");
        }),
    ),
  );
  await harness?.close();
});

describe("readiness with Redis unreachable", () => {
  it("keys, matcher and parcels, which keep nothing in Redis, answer /readyz 200 without a redis check", async () => {
    for (const service of ["keys", "matcher", "parcels"] as const) {
      const answer = await readiness(service);
      expect(answer.status, `${service}: ${JSON.stringify(answer.body)}\n${output}`).toBe(200);
      expect(answer.body).toMatchObject({
        status: "ready",
        checks: { postgres: "ok", kafka: "ok" },
      });
      expect(Object.keys((answer.body as { checks: object }).checks)).not.toContain("redis");
    }
  }, 90_000);

  it("the gateway, whose edge lives in Redis, answers /readyz 503 naming the failing redis check", async () => {
    const answer = await readiness("gateway");
    expect(answer.status, JSON.stringify(answer.body)).toBe(503);
    expect(answer.body).toMatchObject({ status: "not_ready", checks: { redis: "failing" } });
  }, 90_000);
});
