import { CompressionTypes, type KafkaMessage, Partitioners } from "kafkajs";
import { describe, expect, test } from "vitest";
import { brokerFixture, FAST_CONSUMER, uniqueName, waitFor } from "./test-support/kafka.ts";

const cluster = brokerFixture();
const createTopic = (partitions: number) => cluster.createTopic("pc", partitions);

interface Received {
  partition: number;
  message: KafkaMessage;
}

async function consumeAll(
  topic: string,
  count: number,
  options: { maxWaitTimeInMs?: number } = {},
): Promise<Received[]> {
  const consumer = cluster.kafka.consumer({
    groupId: uniqueName("pc-group"),
    ...FAST_CONSUMER,
    ...options,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const received: Received[] = [];
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      received.push({ partition, message });
    },
  });
  try {
    await waitFor(() => received.length >= count, 15_000, `${count} messages`);
  } finally {
    await consumer.disconnect();
  }
  return received;
}

describe("produce and consume", () => {
  test("keys land on the DefaultPartitioner's partition; keys and headers round-trip", async () => {
    const partitions = 6;
    const topic = await createTopic(partitions);
    const producer = cluster.kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    const messages = Array.from({ length: 30 }, (_, i) => ({
      key: `customer-${i}`,
      value: `payload-${i}`,
      headers: {
        "trace-id": `t-${i}`,
        multi: ["a", "b"],
        binary: Buffer.from([0, 255, i]),
        ünïcødé: "✓",
      },
    }));
    await producer.send({ topic, messages });
    await producer.disconnect();

    const partitioner = Partitioners.DefaultPartitioner();
    const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({
      partitionId,
      leader: 0,
      replicas: [0],
      isr: [0],
      partitionErrorCode: 0,
    }));
    const received = await consumeAll(topic, 30);
    expect(received).toHaveLength(30);
    for (const { partition, message } of received) {
      const key = String(message.key);
      const expected = partitioner({ topic, partitionMetadata, message: { key, value: null } });
      expect(partition).toBe(expected);
      const i = Number(key.split("-")[1]);
      expect(String(message.value)).toBe(`payload-${i}`);
      expect(String(message.headers?.["trace-id"])).toBe(`t-${i}`);
      expect(((message.headers?.multi ?? []) as Buffer[]).map(String)).toEqual(["a", "b"]);
      expect(message.headers?.binary).toEqual(Buffer.from([0, 255, i]));
      expect(String(message.headers?.ünïcødé)).toBe("✓");
    }
  });

  test("null keys and tombstones round-trip", async () => {
    const topic = await createTopic(1);
    const producer = cluster.kafka.producer();
    await producer.connect();
    await producer.send({
      topic,
      messages: [
        { key: null, value: "no key" },
        { key: "gone", value: null },
      ],
    });
    await producer.disconnect();
    const received = await consumeAll(topic, 2);
    expect(received[0]?.message.key).toBeNull();
    expect(String(received[0]?.message.value)).toBe("no key");
    expect(String(received[1]?.message.key)).toBe("gone");
    expect(received[1]?.message.value).toBeNull();
  });

  test("acks -1, 1 and 0 all append; acks 0 returns no per-partition result", async () => {
    const topic = await createTopic(1);
    const producer = cluster.kafka.producer();
    await producer.connect();
    const r1 = await producer.send({ topic, acks: -1, messages: [{ value: "all" }] });
    const r2 = await producer.send({ topic, acks: 1, messages: [{ value: "leader" }] });
    const r3 = await producer.send({ topic, acks: 0, messages: [{ value: "none" }] });
    expect(r1[0]?.baseOffset).toBe("0");
    expect(r2[0]?.baseOffset).toBe("1");
    expect(r3).toEqual([]);
    await producer.disconnect();
    const received = await consumeAll(topic, 3);
    expect(received.map((r) => String(r.message.value))).toEqual(["all", "leader", "none"]);
    expect(received.map((r) => r.message.offset)).toEqual(["0", "1", "2"]);
  });

  test("gzip batches are stored compressed and consumed intact", async () => {
    const topic = await createTopic(1);
    const producer = cluster.kafka.producer();
    await producer.connect();
    const value = "a".repeat(1024);
    const bytesBefore = cluster.broker.stats.bytesAppended;
    await producer.send({
      topic,
      compression: CompressionTypes.GZIP,
      messages: Array.from({ length: 100 }, (_, i) => ({ key: `${i}`, value })),
    });
    await producer.disconnect();
    // 100 KB of payload passed through as one gzip batch, never decompressed or re-encoded.
    expect(cluster.broker.stats.bytesAppended - bytesBefore).toBeLessThan(5_000);
    const received = await consumeAll(topic, 100);
    expect(received.every((r) => String(r.message.value) === value)).toBe(true);
    expect(received.map((r) => Number(r.message.key))).toEqual(
      Array.from({ length: 100 }, (_, i) => i),
    );
  });

  test("a message over 1 MB is refused with MESSAGE_TOO_LARGE; 900 KB is accepted", async () => {
    const topic = await createTopic(1);
    const producer = cluster.kafka.producer({ retry: { retries: 0 } });
    await producer.connect();
    await expect(
      producer.send({ topic, messages: [{ value: Buffer.alloc(1_100_000, 1) }] }),
    ).rejects.toThrow(/larger than the max message size/);
    await producer.send({ topic, messages: [{ value: Buffer.alloc(900_000, 2) }] });
    await producer.disconnect();
    const received = await consumeAll(topic, 1);
    expect(received[0]?.message.value?.length).toBe(900_000);
    expect(received[0]?.message.offset).toBe("0");
  });

  test("idempotent producer sends through InitProducerId and every message arrives once", async () => {
    const topic = await createTopic(3);
    const producer = cluster.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    for (let batch = 0; batch < 5; batch++) {
      await producer.send({
        topic,
        acks: -1,
        messages: Array.from({ length: 20 }, (_, i) => ({
          key: `k${i}`,
          value: `${batch}-${i}`,
        })),
      });
    }
    await producer.disconnect();
    const received = await consumeAll(topic, 100);
    expect(new Set(received.map((r) => String(r.message.value))).size).toBe(100);
    expect(received).toHaveLength(100);
  });

  test("a parked fetch wakes on produce instead of waiting out maxWaitTimeInMs", async () => {
    const topic = await createTopic(1);
    const maxWaitTimeInMs = 5000;
    const consumer = cluster.kafka.consumer({
      groupId: uniqueName("longpoll"),
      ...FAST_CONSUMER,
      maxWaitTimeInMs,
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    let deliveredAt = 0;
    let joined = false;
    consumer.on(consumer.events.GROUP_JOIN, () => {
      joined = true;
    });
    await consumer.run({
      eachMessage: async () => {
        deliveredAt = Date.now();
      },
    });
    await waitFor(() => joined && cluster.broker.stats.parkedFetches > 0, 10_000, "a parked fetch");
    const producer = cluster.kafka.producer();
    await producer.connect();
    const sentAt = Date.now();
    await producer.send({ topic, messages: [{ value: "wake up" }] });
    await waitFor(() => deliveredAt > 0, 10_000, "delivery");
    // Without wake-up the message would wait for the 5 s long-poll to expire.
    expect(deliveredAt - sentAt).toBeLessThan(maxWaitTimeInMs / 2);
    await producer.disconnect();
    await consumer.disconnect();
  });

  test("fromBeginning false only sees messages produced after joining", async () => {
    const topic = await createTopic(1);
    const producer = cluster.kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ value: "old" }] });
    const consumer = cluster.kafka.consumer({ groupId: uniqueName("latest"), ...FAST_CONSUMER });
    let joined = false;
    consumer.on(consumer.events.GROUP_JOIN, () => {
      joined = true;
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: false });
    const values: string[] = [];
    await consumer.run({
      eachMessage: async ({ message }) => {
        values.push(String(message.value));
      },
    });
    await waitFor(
      () => joined && cluster.broker.stats.parkedFetches > 0,
      10_000,
      "consumer to be polling",
    );
    await producer.send({ topic, messages: [{ value: "new" }] });
    await waitFor(() => values.length === 1, 10_000, "the new message");
    expect(values).toEqual(["new"]);
    await consumer.disconnect();
    await producer.disconnect();
  });
});
