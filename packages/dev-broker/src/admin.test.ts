import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type RunningBroker, startBroker } from "./index.ts";
import { kafkaClient, uniqueName } from "./test-support/kafka.ts";

let broker: RunningBroker;
let autoCreateBroker: RunningBroker;
beforeAll(async () => {
  broker = await startBroker({ port: 0 });
  autoCreateBroker = await startBroker({ port: 0, autoCreateTopics: true, defaultPartitions: 4 });
});
afterAll(async () => {
  await broker.stop();
  await autoCreateBroker.stop();
});

describe("admin", () => {
  test("createTopics returns true, then false when the topic exists", async () => {
    const admin = kafkaClient(broker.brokers).admin();
    await admin.connect();
    const topic = uniqueName("create");
    expect(await admin.createTopics({ topics: [{ topic, numPartitions: 6 }] })).toBe(true);
    expect(await admin.createTopics({ topics: [{ topic, numPartitions: 6 }] })).toBe(false);
    expect(await admin.listTopics()).toContain(topic);
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    const partitions = metadata.topics[0]?.partitions ?? [];
    expect(partitions.map((p) => p.partitionId).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(partitions.every((p) => p.leader === 0 && p.isr.join() === "0")).toBe(true);
    await admin.disconnect();
  });

  test("validateOnly creates nothing; bad names, partition counts and configs are refused", async () => {
    const admin = kafkaClient(broker.brokers).admin();
    await admin.connect();
    const topic = uniqueName("validate");
    await admin.createTopics({
      validateOnly: true,
      waitForLeaders: false,
      topics: [{ topic, numPartitions: 2 }],
    });
    expect(await admin.listTopics()).not.toContain(topic);
    await expect(admin.createTopics({ topics: [{ topic: "bad name!" }] })).rejects.toThrow();
    await expect(admin.createTopics({ topics: [{ topic, numPartitions: 0 }] })).rejects.toThrow();
    await expect(
      admin.createTopics({
        topics: [{ topic, configEntries: [{ name: "retention.ms", value: "soon" }] }],
      }),
    ).rejects.toThrow();
    expect(await admin.listTopics()).not.toContain(topic);
    await admin.disconnect();
  });

  test("fetchTopicOffsets and fetchTopicOffsetsByTimestamp follow produced data", async () => {
    const kafka = kafkaClient(broker.brokers);
    const admin = kafka.admin();
    const producer = kafka.producer();
    await Promise.all([admin.connect(), producer.connect()]);
    const topic = uniqueName("offsets");
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
    const base = Date.now() - 60_000;
    await producer.send({
      topic,
      messages: [0, 1, 2, 3, 4].map((i) => ({
        partition: 1,
        value: `m${i}`,
        timestamp: String(base + i * 1000),
      })),
    });
    const offsets = await admin.fetchTopicOffsets(topic);
    expect(offsets.sort((a, b) => a.partition - b.partition)).toMatchObject([
      { partition: 0, low: "0", high: "0" },
      { partition: 1, low: "0", high: "5" },
    ]);
    const byTime = await admin.fetchTopicOffsetsByTimestamp(topic, base + 2500);
    expect(byTime.find((p) => p.partition === 1)?.offset).toBe("3");
    await Promise.all([admin.disconnect(), producer.disconnect()]);
  });

  test("deleteTopics removes the topic and its metadata", async () => {
    const admin = kafkaClient(broker.brokers).admin();
    await admin.connect();
    const topic = uniqueName("delete");
    await admin.createTopics({ topics: [{ topic }] });
    await admin.deleteTopics({ topics: [topic] });
    expect(await admin.listTopics()).not.toContain(topic);
    await expect(admin.fetchTopicMetadata({ topics: [topic] })).rejects.toThrow(
      /does not host this topic-partition/,
    );
    await admin.disconnect();
  });

  test("createPartitions grows a topic and refuses to shrink it", async () => {
    const kafka = kafkaClient(broker.brokers);
    const admin = kafka.admin();
    await admin.connect();
    const topic = uniqueName("grow");
    await admin.createTopics({ topics: [{ topic, numPartitions: 3 }] });
    await admin.createPartitions({ topicPartitions: [{ topic, count: 5 }] });
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    expect(metadata.topics[0]?.partitions).toHaveLength(5);
    await expect(
      admin.createPartitions({ topicPartitions: [{ topic, count: 2 }] }),
    ).rejects.toThrow();
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ partition: 4, value: "new partition" }] });
    expect((await admin.fetchTopicOffsets(topic)).find((p) => p.partition === 4)?.high).toBe("1");
    await producer.disconnect();
    await admin.disconnect();
  });

  test("fetchOffsets for a group that never committed reports -1, not an error", async () => {
    const admin = kafkaClient(broker.brokers).admin();
    await admin.connect();
    const topic = uniqueName("nogroup");
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
    const result = await admin.fetchOffsets({ groupId: uniqueName("never"), topics: [topic] });
    expect(result[0]?.partitions.map((p) => p.offset)).toEqual(["-1", "-1"]);
    await admin.disconnect();
  });
});

describe("topic auto-creation", () => {
  test("is off by default: producing to a missing topic fails and creates nothing", async () => {
    const kafka = kafkaClient(broker.brokers);
    const producer = kafka.producer({ retry: { retries: 1, initialRetryTime: 50 } });
    await producer.connect();
    const topic = uniqueName("missing");
    await expect(producer.send({ topic, messages: [{ value: "x" }] })).rejects.toThrow(
      /does not host this topic-partition/,
    );
    const admin = kafka.admin();
    await admin.connect();
    expect(await admin.listTopics()).not.toContain(topic);
    await Promise.all([admin.disconnect(), producer.disconnect()]);
  });

  test("when enabled, a producer creates the topic with the default partition count", async () => {
    const kafka = kafkaClient(autoCreateBroker.brokers);
    const producer = kafka.producer();
    await producer.connect();
    const topic = uniqueName("auto");
    await producer.send({ topic, messages: [{ value: "x" }] });
    const admin = kafka.admin();
    await admin.connect();
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    expect(metadata.topics[0]?.partitions).toHaveLength(4);
    // Admin clients never auto-create, as in kafkajs against a real cluster.
    await expect(admin.fetchTopicMetadata({ topics: [uniqueName("admin")] })).rejects.toThrow();
    await Promise.all([admin.disconnect(), producer.disconnect()]);
  });
});
