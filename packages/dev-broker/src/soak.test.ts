import type { Consumer } from "kafkajs";
import { expect, test } from "vitest";
import {
  brokerFixture,
  FAST_CONSUMER,
  trackAssignment,
  uniqueName,
  waitFor,
} from "./test-support/kafka.ts";

const cluster = brokerFixture();

test("100k messages over 12 partitions with a rebalance mid-run: nothing lost", async () => {
  const total = 100_000;
  const kafka = cluster.kafka;
  const admin = kafka.admin();
  await admin.connect();
  const topic = uniqueName("soak");
  const groupId = uniqueName("soak-group");
  await admin.createTopics({ topics: [{ topic, numPartitions: 12 }] });
  await admin.disconnect();

  const seen = new Uint8Array(total);
  let delivered = 0;
  const members: Array<{ consumer: Consumer; assignment: { partitions: number[] } }> = [];
  const startMember = async (): Promise<void> => {
    const consumer = kafka.consumer({ groupId, ...FAST_CONSUMER });
    const assignment = trackAssignment(consumer, topic);
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        const i = Number(message.value?.toString("latin1", 0, 8));
        seen[i] = Math.min(255, (seen[i] ?? 0) + 1);
        delivered++;
      },
    });
    members.push({ consumer, assignment });
  };
  await startMember();
  await startMember();

  const producer = kafka.producer();
  await producer.connect();
  const payload = "x".repeat(92);
  const producing = (async () => {
    for (let base = 0; base < total; base += 1000) {
      await producer.send({
        topic,
        acks: -1,
        messages: Array.from({ length: 1000 }, (_, j) => ({
          key: String(base + j),
          value: `${String(base + j).padStart(8, "0")}${payload}`,
        })),
      });
    }
  })();

  await waitFor(() => delivered >= total * 0.3, 30_000, "30% of the messages");
  const deliveredWhenThirdJoined = delivered;
  await startMember();
  await producing;
  await producer.disconnect();
  await waitFor(
    () => members.map((m) => m.assignment.partitions.length).join() === "4,4,4",
    20_000,
    "a 4/4/4 split after the rebalance",
  );
  await waitFor(() => seen.every((n) => n > 0), 40_000, "every message");
  await Promise.all(members.map((m) => m.consumer.disconnect()));

  const missing = seen.filter((n) => n === 0).length;
  const duplicates = delivered - total;
  expect(deliveredWhenThirdJoined).toBeLessThan(total);
  expect(missing).toBe(0);
  // Redelivery is only legal for the batch in flight when the rebalance hit.
  expect(duplicates).toBeLessThan(total * 0.05);
});
