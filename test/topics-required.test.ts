// Services never create topics, nor lean on a broker's auto-creation: on a cluster where the
// topic plan was not applied, a service stops at start in one line that names what is missing
// and what to run, and leaves the cluster as it found it.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { type RunningBroker, startBroker } from "@th/dev-broker";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations } from "../services/quota-ledger/src/db/migrations.ts";

const root = join(import.meta.dirname, "..");
let broker: RunningBroker;
let db: TestDatabase;

beforeAll(async () => {
  // Auto-creation on, as some clusters still have it: the service must not use it either.
  broker = await startBroker({ port: 0, autoCreateTopics: true, defaultPartitions: 1 });
  db = await createTestDatabase([migrations]);
});
afterAll(async () => {
  await broker?.stop();
  await db?.drop();
});

describe("a service on a cluster without the topic plan", () => {
  it("exits 1 in one line naming the missing topics and the command to run, creating none", async () => {
    const child = spawn(process.execPath, ["services/quota-ledger/src/main.ts"], {
      cwd: root,
      env: {
        PATH: process.env.PATH,
        DATABASE_URL: db.url,
        KAFKA_BROKERS: broker.brokers.join(","),
        PORT: "0",
        INTERNAL_PORT: "0",
        HOST: "127.0.0.1",
        LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect(code).toBe(1);
    const lines = output.trim().split("\n");
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0] as string) as {
      level: number;
      msg: string;
      missing_topics: string[];
    };
    expect(line.level).toBe(60);
    expect(line.missing_topics).toEqual([
      "leadview.recorded",
      "leadview.recorded.parked",
      "leadview.voided",
      "leadview.voided.parked",
      "tenant.changed",
      "tenant.changed.parked",
    ]);
    expect(line.msg).toBe(
      "Kafka lacks topics leadview.recorded, leadview.recorded.parked, leadview.voided, leadview.voided.parked, tenant.changed, tenant.changed.parked: apply the topic plan first (`npm run topics -- --apply`; the Helm chart runs it as a hook)",
    );
    expect(output).not.toMatch(/\n\s+at /);

    const admin = new Kafka({ brokers: broker.brokers, logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    expect(await admin.listTopics()).toEqual([]);
    await admin.disconnect();
  });
});
