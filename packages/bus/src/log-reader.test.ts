import { startBroker } from "@th/dev-broker";
import { Kafka, logLevel, type Producer } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LogRecord, readLog } from "./log-reader.ts";
import { createTestTopic } from "./testing/topics.ts";

let broker: Awaited<ReturnType<typeof startBroker>>;
let kafka: Kafka;
let producer: Producer;

beforeAll(async () => {
  broker = await startBroker({ port: 0 });
  kafka = new Kafka({ brokers: broker.brokers, logLevel: logLevel.NOTHING });
  producer = kafka.producer();
  await producer.connect();
});

afterAll(async () => {
  await producer.disconnect();
  await broker.stop();
});

function topicWith(partitions: number): Promise<string> {
  return createTestTopic(kafka, "log-reader", partitions);
}

function address(): { host: string; port: number } {
  const [host, port] = (broker.brokers[0] as string).split(":");
  return { host: host as string, port: Number(port) };
}

describe("log reader", () => {
  it("reads every partition in offset order up to the end offsets, across many small fetches", async () => {
    const topic = await topicWith(2);
    for (let round = 0; round < 20; round++) {
      await producer.send({
        topic,
        messages: Array.from({ length: 26 }, (_, index) => ({
          partition: index % 2,
          key: `k${index}`,
          value: `v${round * 26 + index}`,
          headers: { "th-schema": "s@1", other: "x" },
        })),
      });
    }
    const slices: LogRecord[][] = [];
    const total = await readLog(
      {
        clientId: "log-reader-test",
        ...address(),
        topic,
        // Partition 0 from offset 10 to 200 (its end is 260), partition 1 whole and beyond.
        ranges: new Map([
          [0, [10n, 200n]],
          [1, [0n, 300n]],
        ]),
        header: "th-schema",
        maxBytesPerPartition: 2048,
      },
      async (records) => {
        slices.push(records);
      },
    );
    const records = slices.flat();
    expect(slices.length).toBeGreaterThan(2);
    expect(total).toBe(190 + 260);
    for (const partition of [0, 1]) {
      const offsets = records
        .filter((record) => record.partition === partition)
        .map((record) => Number(record.offset));
      const [from, to] = partition === 0 ? [10, 200] : [0, 260];
      expect(offsets).toEqual(Array.from({ length: to - from }, (_, index) => from + index));
    }
    expect(records.every((record) => record.header === "s@1")).toBe(true);
    expect(records.find((record) => record.partition === 1)?.value?.toString()).toBe("v1");
  });

  it("reads nothing and fetches nothing when every range is empty", async () => {
    const topic = await topicWith(1);
    let calls = 0;
    const total = await readLog(
      {
        clientId: "log-reader-test",
        ...address(),
        topic,
        ranges: new Map([[0, [0n, 0n]]]),
        header: "th-schema",
      },
      async () => {
        calls++;
      },
    );
    expect([total, calls]).toEqual([0, 0]);
  });

  it("fails when a slice cannot be applied", async () => {
    const topic = await topicWith(1);
    await producer.send({ topic, messages: [{ value: "a" }, { value: "b" }] });
    await expect(
      readLog(
        {
          clientId: "log-reader-test",
          ...address(),
          topic,
          ranges: new Map([[0, [0n, 2n]]]),
          header: "th-schema",
        },
        async () => {
          throw new Error("shadow write failed");
        },
      ),
    ).rejects.toThrow("shadow write failed");
  });
});
