import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Kafka } from "kafkajs";
import { afterAll, describe, expect, test } from "vitest";
import { type RunningBroker, startBroker } from "./index.ts";
import { spawnCliBroker, waitForExit } from "./test-support/child-broker.ts";
import { FAST_CONSUMER, kafkaClient, uniqueName, waitFor } from "./test-support/kafka.ts";
import { kafkajsProtocol, RawClient } from "./test-support/raw-client.ts";

const dirs: string[] = [];
function freshDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "dev-broker-test-"));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const d of dirs) {
    rmSync(d, { recursive: true, force: true });
  }
});

async function consumeValues(
  kafka: Kafka,
  topic: string,
  groupId: string,
  count: number,
): Promise<string[]> {
  const consumer = kafka.consumer({ groupId, ...FAST_CONSUMER });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const values: string[] = [];
  await consumer.run({
    eachMessage: async ({ message }) => {
      values.push(String(message.value));
    },
  });
  try {
    await waitFor(() => values.length >= count, 15_000, `${count} messages`);
    await new Promise((r) => setTimeout(r, 300)); // surface any extra deliveries
  } finally {
    await consumer.disconnect();
  }
  return values;
}

function segmentFiles(dataDir: string, topic: string, partition: number): string[] {
  const logs = join(dataDir, "logs");
  const topicDir = readdirSync(logs).find((d) => d.startsWith(`${topic}-`));
  if (topicDir === undefined) {
    return [];
  }
  const dir = join(logs, topicDir, String(partition));
  return readdirSync(dir)
    .filter((f) => f.endsWith(".log"))
    .map((f) => join(dir, f));
}

describe("persistence", () => {
  test("topics, data and committed offsets survive a broker restart", async () => {
    const dataDir = freshDataDir();
    const topic = uniqueName("durable");
    const groupId = uniqueName("durable-group");
    let broker: RunningBroker = await startBroker({ port: 0, dataDir, minSessionTimeoutMs: 100 });
    let kafka = kafkaClient(broker.brokers);
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      topics: [{ topic, numPartitions: 3, configEntries: [{ name: "retention.ms", value: "-1" }] }],
    });
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic,
      acks: -1,
      messages: Array.from({ length: 50 }, (_, i) => ({ key: `${i}`, value: `v${i}` })),
    });
    await producer.disconnect();
    expect((await consumeValues(kafka, topic, groupId, 50)).length).toBe(50);
    await broker.stop();

    broker = await startBroker({ port: 0, dataDir, minSessionTimeoutMs: 100 });
    kafka = kafkaClient(broker.brokers);
    const admin2 = kafka.admin();
    await admin2.connect();
    const metadata = await admin2.fetchTopicMetadata({ topics: [topic] });
    expect(metadata.topics[0]?.partitions).toHaveLength(3);
    const highs = (await admin2.fetchTopicOffsets(topic)).map((p) => Number(p.high));
    expect(highs.reduce((a, b) => a + b, 0)).toBe(50);
    await admin2.disconnect();
    const producer2 = kafka.producer();
    await producer2.connect();
    await producer2.send({ topic, acks: -1, messages: [{ key: "new", value: "after-restart" }] });
    await producer2.disconnect();
    // Same group: only the message produced after the restart is new to it.
    expect(await consumeValues(kafka, topic, groupId, 1)).toEqual(["after-restart"]);
    // A fresh group still reads everything back from disk.
    expect((await consumeValues(kafka, topic, uniqueName("fresh"), 51)).length).toBe(51);
    await broker.stop();
  });

  test("kill -9 loses nothing acknowledged with acks=-1", async () => {
    const dataDir = freshDataDir();
    const topic = uniqueName("kill9");
    const groupId = uniqueName("kill9-group");
    const child = await spawnCliBroker([
      "--port",
      "0",
      "--data-dir",
      dataDir,
      "--log-level",
      "error",
    ]);
    const kafka = kafkaClient([child.address]);
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 4 }] });
    await admin.disconnect();
    // A simple (generation -1) OffsetCommit, acknowledged only once it is fsynced.
    const [host, port] = child.address.split(":");
    const raw = await RawClient.connect(Number(port), host);
    const commit = kafkajsProtocol("offsetCommit", 5);
    await raw.roundTrip(
      commit.request({
        groupId,
        groupGenerationId: -1,
        memberId: "",
        topics: [{ topic, partitions: [{ partition: 2, offset: "7" }] }],
      }),
      commit.response,
    );
    raw.close();

    // No retries: once the broker is killed, in-flight sends must fail rather than reconnect.
    const producer = kafkaClient([child.address], uniqueName("writer"), {
      initialRetryTime: 50,
      retries: 0,
    }).producer();
    await producer.connect();
    const acknowledged: string[] = [];
    let stop = false;
    const writers = [0, 1, 2].map(async (writer) => {
      for (let i = 0; !stop; i++) {
        const values = Array.from({ length: 5 }, (_, j) => `w${writer}-${i}-${j}`);
        try {
          await producer.send({
            topic,
            acks: -1,
            messages: values.map((value) => ({ key: value, value })),
          });
          acknowledged.push(...values);
        } catch {
          return; // the broker is gone
        }
      }
    });
    await waitFor(() => acknowledged.length >= 600, 20_000, "600 acknowledged messages");
    child.process.kill("SIGKILL");
    await waitForExit(child.process);
    stop = true;
    await Promise.all(writers);
    await producer.disconnect().catch(() => {});

    const broker = await startBroker({ port: 0, dataDir, minSessionTimeoutMs: 100 });
    const after = kafkaClient(broker.brokers);
    const admin2 = after.admin();
    await admin2.connect();
    const committed = await admin2.fetchOffsets({ groupId, topics: [topic] });
    expect(committed[0]?.partitions.find((p) => p.partition === 2)?.offset).toBe("7");
    const total = (await admin2.fetchTopicOffsets(topic))
      .map((p) => Number(p.high))
      .reduce((a, b) => a + b, 0);
    await admin2.disconnect();
    expect(total).toBeGreaterThanOrEqual(acknowledged.length);
    const values = new Set(await consumeValues(after, topic, uniqueName("verify"), total));
    const lost = acknowledged.filter((v) => !values.has(v));
    expect(lost).toEqual([]);
    await broker.stop();
  });

  test("a torn tail is truncated to the last whole batch on restart", async () => {
    const dataDir = freshDataDir();
    const topic = uniqueName("torn");
    let broker = await startBroker({ port: 0, dataDir, minSessionTimeoutMs: 100 });
    let kafka = kafkaClient(broker.brokers);
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }] });
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    for (let i = 0; i < 5; i++) {
      await producer.send({ topic, acks: -1, messages: [{ value: `m${i}` }] });
    }
    await producer.disconnect();
    await broker.stop();

    // Simulate a crash mid-write: half of a copy of the last batch lands at the end of the file.
    const [segment] = segmentFiles(dataDir, topic, 0);
    const bytes = readFileSync(segment as string);
    appendFileSync(segment as string, bytes.subarray(0, Math.floor(bytes.length / 10)));

    broker = await startBroker({ port: 0, dataDir, minSessionTimeoutMs: 100 });
    expect(broker.stats.truncatedBytesOnRecovery).toBe(Math.floor(bytes.length / 10));
    expect(readFileSync(segment as string).length).toBe(bytes.length);
    kafka = kafkaClient(broker.brokers);
    const producer2 = kafka.producer();
    await producer2.connect();
    const [result] = await producer2.send({ topic, acks: -1, messages: [{ value: "m5" }] });
    expect(result?.baseOffset).toBe("5");
    await producer2.disconnect();
    expect(await consumeValues(kafka, topic, uniqueName("torn-group"), 6)).toEqual([
      "m0",
      "m1",
      "m2",
      "m3",
      "m4",
      "m5",
    ]);
    await broker.stop();
  });
});

describe("retention", () => {
  test("retention.bytes drops whole old segments from disk; consumers start at the new log start", async () => {
    const dataDir = freshDataDir();
    const topic = uniqueName("retain-bytes");
    const broker = await startBroker({ port: 0, dataDir, minSessionTimeoutMs: 100 });
    const kafka = kafkaClient(broker.brokers);
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      topics: [
        {
          topic,
          numPartitions: 1,
          configEntries: [
            { name: "segment.bytes", value: "4096" },
            { name: "retention.bytes", value: "8192" },
          ],
        },
      ],
    });
    const producer = kafka.producer();
    await producer.connect();
    for (let i = 0; i < 60; i++) {
      await producer.send({ topic, messages: [{ value: `${i}:${"x".repeat(500)}` }] });
    }
    await producer.disconnect();
    const filesBefore = segmentFiles(dataDir, topic, 0).length;
    expect(filesBefore).toBeGreaterThan(4);
    expect(broker.enforceRetention()).toBeGreaterThan(0);
    const files = segmentFiles(dataDir, topic, 0);
    expect(files.length).toBeLessThan(filesBefore);
    const onDisk = files.map((f) => readFileSync(f).length).reduce((a, b) => a + b, 0);
    expect(onDisk).toBeLessThanOrEqual(8192 + 4096);
    const [offsets] = await admin.fetchTopicOffsets(topic);
    const low = Number(offsets?.low);
    expect(low).toBeGreaterThan(0);
    expect(Number(offsets?.high)).toBe(60);
    await admin.disconnect();
    const values = await consumeValues(kafka, topic, uniqueName("after-retention"), 60 - low);
    expect(values.map((v) => Number(v.split(":")[0]))).toEqual(
      Array.from({ length: 60 - low }, (_, i) => low + i),
    );
    await broker.stop();
  });

  test("retention.ms expires old records; retention.ms=-1 keeps them forever", async () => {
    const broker = await startBroker({ port: 0, minSessionTimeoutMs: 100 });
    const kafka = kafkaClient(broker.brokers);
    const admin = kafka.admin();
    await admin.connect();
    const expiring = uniqueName("retain-ms");
    const forever = uniqueName("retain-forever");
    await admin.createTopics({
      topics: [
        { topic: expiring, configEntries: [{ name: "retention.ms", value: "3600000" }] },
        { topic: forever, configEntries: [{ name: "retention.ms", value: "-1" }] },
      ],
    });
    const producer = kafka.producer();
    await producer.connect();
    const twoDaysAgo = String(Date.now() - 2 * 24 * 3600 * 1000);
    for (const topic of [expiring, forever]) {
      await producer.send({
        topic,
        messages: Array.from({ length: 5 }, (_, i) => ({
          value: `old${i}`,
          timestamp: twoDaysAgo,
        })),
      });
    }
    broker.enforceRetention();
    for (const topic of [expiring, forever]) {
      await producer.send({ topic, messages: [{ value: "fresh" }] });
    }
    broker.enforceRetention();
    await producer.disconnect();
    const [expired] = await admin.fetchTopicOffsets(expiring);
    expect(expired).toMatchObject({ low: "5", high: "6" });
    const [kept] = await admin.fetchTopicOffsets(forever);
    expect(kept).toMatchObject({ low: "0", high: "6" });
    await admin.disconnect();
    expect(await consumeValues(kafka, expiring, uniqueName("g"), 1)).toEqual(["fresh"]);
    await broker.stop();
  });
});
