import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ChildBroker, spawnCliBroker, waitForExit } from "./test-support/child-broker.ts";
import { kafkaClient, uniqueName } from "./test-support/kafka.ts";

const kcatAvailable = spawnSync("kcat", ["-V"]).status === 0;
if (!kcatAvailable) {
  console.warn("kcat smoke tests skipped: `kcat` is not installed (apt-get install -y kcat)");
}

let dataDir: string;
let broker: ChildBroker;
beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "dev-broker-cli-"));
  broker = await spawnCliBroker(["--port", "0", "--data-dir", dataDir, "--log-level", "warn"]);
});
afterAll(() => {
  broker.process.kill("SIGKILL");
  rmSync(dataDir, { recursive: true, force: true });
});

function kcat(args: string[], input?: string): string {
  return execFileSync("kcat", ["-b", broker.address, ...args], {
    input,
    encoding: "utf8",
    timeout: 15_000,
  });
}

describe("CLI", () => {
  test("prints one ready line with the bound address and keeps data in --data-dir", async () => {
    expect(broker.address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(broker.address).not.toBe("127.0.0.1:0");
    const admin = kafkaClient([broker.address]).admin();
    await admin.connect();
    const topic = uniqueName("cli");
    await admin.createTopics({ topics: [{ topic }] });
    await admin.disconnect();
    expect(readdirSync(dataDir)).toEqual(expect.arrayContaining(["topics.json", "logs"]));
  });

  test("stops cleanly on SIGINT and SIGTERM", async () => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      const dir = mkdtempSync(join(tmpdir(), "dev-broker-cli-signal-"));
      const child = await spawnCliBroker([
        "--port",
        "0",
        "--data-dir",
        dir,
        "--log-level",
        "error",
      ]);
      child.process.kill(signal);
      expect(await waitForExit(child.process)).toBe(0);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!kcatAvailable)("kcat", () => {
  test("lists metadata, produces and consumes", async () => {
    const topic = uniqueName("kcat");
    const admin = kafkaClient([broker.address]).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 3 }] });
    await admin.disconnect();

    const metadata = kcat(["-L", "-t", topic]);
    expect(metadata).toContain(`topic "${topic}" with 3 partitions`);
    expect(metadata).toContain(`broker 0 at ${broker.address}`);

    kcat(["-P", "-t", topic, "-p", "1", "-K", ":"], "k1:one\nk2:two\n");
    kcat(["-P", "-t", topic, "-p", "1", "-z", "gzip"], "three\n");
    const consumed = kcat([
      "-C",
      "-t",
      topic,
      "-p",
      "1",
      "-o",
      "beginning",
      "-e",
      "-q",
      "-X",
      "check.crcs=true",
      "-f",
      "%k=%s@%o\\n",
    ]);
    expect(consumed.trim().split("\n")).toEqual(["k1=one@0", "k2=two@1", "=three@2"]);
  });

  test("kcat negotiates ApiVersions v3 with no parse failure and no fallback to v0", () => {
    const run = spawnSync("kcat", ["-b", broker.address, "-L", "-d", "protocol,broker"], {
      encoding: "utf8",
      timeout: 15_000,
    });
    expect(run.status).toBe(0);
    const debug = run.stderr;
    expect(debug).toMatch(/Sent ApiVersionRequest \(v3,/);
    expect(debug).toMatch(/Received ApiVersionResponse \(v3,/);
    expect(debug).not.toContain("Protocol parse failure");
    expect(debug).not.toMatch(/ApiVersionRequest \(v0,/);
    expect(debug).toMatch(/Broker changed state APIVERSION_QUERY -> UP/);
  });

  test("kafkajs reads what kcat produced", async () => {
    const topic = uniqueName("kcat-kafkajs");
    const admin = kafkaClient([broker.address]).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic }] });
    await admin.disconnect();
    kcat(["-P", "-t", topic, "-K", ":", "-H", "source=kcat"], "key:value\n");
    const consumer = kafkaClient([broker.address]).consumer({
      groupId: uniqueName("kcat-group"),
      maxWaitTimeInMs: 200,
      heartbeatInterval: 150,
      sessionTimeout: 6000,
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const got = await new Promise<{ key: string; value: string; header: string }>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          resolve({
            key: String(message.key),
            value: String(message.value),
            header: String(message.headers?.source),
          });
        },
      });
    });
    await consumer.disconnect();
    expect(got).toEqual({ key: "key", value: "value", header: "kcat" });
  });
});
