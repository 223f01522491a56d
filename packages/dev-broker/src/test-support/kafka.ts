// Shared helpers for the integration tests: a broker per test file, fast kafkajs client configs
// and polling utilities.
import { randomUUID } from "node:crypto";
import { type Consumer, type ConsumerConfig, Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll } from "vitest";
import { type RunningBroker, startBroker } from "../index.ts";

export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export function kafkaClient(
  brokers: string[],
  clientId = uniqueName("client"),
  retry = { initialRetryTime: 100, retries: 8 },
): Kafka {
  return new Kafka({ clientId, brokers, logLevel: logLevel.NOTHING, retry });
}

export const FAST_CONSUMER: Omit<ConsumerConfig, "groupId"> = {
  maxWaitTimeInMs: 200,
  heartbeatInterval: 150,
  sessionTimeout: 3000,
  rebalanceTimeout: 6000,
  retry: { initialRetryTime: 100, retries: 8 },
};

export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) {
      return;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Tracks which partitions a consumer currently owns, from kafkajs GROUP_JOIN events. */
export function trackAssignment(consumer: Consumer, topic: string): { partitions: number[] } {
  const state = { partitions: [] as number[] };
  consumer.on(consumer.events.GROUP_JOIN, (event) => {
    state.partitions = [...(event.payload.memberAssignment[topic] ?? [])].sort((a, b) => a - b);
  });
  return state;
}

/**
 * A broker and a fast client for one test file, started before its tests and stopped after
 * them; `createTopic` makes a topic of its own for a test.
 */
export function brokerFixture() {
  let running: RunningBroker | undefined;
  let client: Kafka | undefined;
  beforeAll(async () => {
    running = await startBroker({ port: 0, minSessionTimeoutMs: 100 });
    client = kafkaClient(running.brokers);
  });
  afterAll(async () => {
    await running?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) {
      throw new Error("the broker fixture starts in beforeAll");
    }
    return value;
  };
  return {
    get broker(): RunningBroker {
      return started(running);
    },
    get kafka(): Kafka {
      return started(client);
    },
    async createTopic(prefix: string, partitions: number): Promise<string> {
      const admin = started(client).admin();
      await admin.connect();
      const topic = uniqueName(prefix);
      await admin.createTopics({ topics: [{ topic, numPartitions: partitions }] });
      await admin.disconnect();
      return topic;
    },
  };
}
