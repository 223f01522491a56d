import { randomBytes } from "node:crypto";
import type { Kafka } from "kafkajs";

/** A topic of its own for one test, `<prefix>.<random>`, with its partitions' leaders ready. */
export async function createTestTopic(
  kafka: Kafka,
  prefix: string,
  partitions: number,
): Promise<string> {
  const topic = `${prefix}.${randomBytes(4).toString("hex")}`;
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({
      topics: [{ topic, numPartitions: partitions }],
      waitForLeaders: true,
    });
  } finally {
    await admin.disconnect();
  }
  return topic;
}
