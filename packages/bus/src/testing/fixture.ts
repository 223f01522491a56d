import { randomBytes } from "node:crypto";
import { contracts, type LeadViewRecorded, parkedTopicOf, type TopicContract } from "@th/contracts";
import { createLogger } from "@th/telemetry";
import { startTestKafka, type TestKafka } from "@th/test-stores";
import { type Admin, Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, expect, vi } from "vitest";
import { Bus, type RunningConsumer } from "../bus.ts";

/** Consumer timings short enough for tests, as the services' test harness uses. */
export const TEST_TIMINGS = { sessionTimeout: 6000, heartbeatInterval: 300, maxWaitTimeInMs: 100 };

export interface BusFixture {
  readonly bus: Bus;
  readonly brokers: string[];
  /** A plain kafkajs client, to check the bus against a client other than its own. */
  readonly raw: Kafka;
  readonly admin: Admin;
  /** Stopped when the file's tests end. */
  track(consumer: RunningConsumer): RunningConsumer;
  /** A copy of the lead-view contract on a topic of its own, so tests never see each other. */
  isolatedTopic(partitions?: number): Promise<TopicContract<LeadViewRecorded>>;
  /**
   * The records parked from `topic` as a plain kafkajs consumer reads them, once at least
   * `expected` are there (15 s at most).
   */
  parkedRecords(
    topic: string,
    expected: number,
  ): Promise<{ value: Buffer | null; headers: Record<string, string> }[]>;
}

/** A Kafka of its own (see @th/test-stores), a bus and a raw client for one test file. */
export function busFixture(name: string): BusFixture {
  let broker: TestKafka | undefined;
  let bus: Bus | undefined;
  let raw: Kafka | undefined;
  let admin: Admin | undefined;
  const running: RunningConsumer[] = [];

  beforeAll(async () => {
    broker = await startTestKafka();
    bus = new Bus({
      brokers: broker.brokers,
      clientId: name,
      logger: createLogger({ service: name, level: "silent" }),
      consumerTimings: TEST_TIMINGS,
    });
    raw = new Kafka({ brokers: broker.brokers, clientId: "raw", logLevel: logLevel.NOTHING });
    admin = raw.admin();
    await admin.connect();
  });

  afterAll(async () => {
    await Promise.all(running.map((consumer) => consumer.stop()));
    await admin?.disconnect();
    await bus?.close();
    await broker?.stop();
  });

  const started = <T>(value: T | undefined): T => {
    if (value === undefined) {
      throw new Error("the bus fixture starts in beforeAll");
    }
    return value;
  };
  return {
    get bus() {
      return started(bus);
    },
    get brokers() {
      return started(broker).brokers;
    },
    get raw() {
      return started(raw);
    },
    get admin() {
      return started(admin);
    },
    track(consumer) {
      running.push(consumer);
      return consumer;
    },
    async isolatedTopic(partitions = 3) {
      const contract = {
        ...contracts.leadViewRecorded,
        topic: `${name}.${randomBytes(4).toString("hex")}`,
        partitions,
      };
      await started(bus).provision([contract]);
      return contract;
    },
    async parkedRecords(topic, expected) {
      const records: { value: Buffer | null; headers: Record<string, string> }[] = [];
      const consumer = started(raw).consumer({
        groupId: `parked-${randomBytes(4).toString("hex")}`,
        maxWaitTimeInMs: 100,
      });
      await consumer.connect();
      await consumer.subscribe({ topic: parkedTopicOf(topic), fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          const headers: Record<string, string> = {};
          for (const [header, value] of Object.entries(message.headers ?? {})) {
            headers[header] = String(value);
          }
          records.push({ value: message.value, headers });
        },
      });
      try {
        await vi.waitFor(() => expect(records.length).toBeGreaterThanOrEqual(expected), {
          timeout: 15_000,
        });
      } finally {
        // A timed-out wait would leave it fetching from a broker the file is about to stop.
        await consumer.disconnect();
      }
      return records;
    },
  };
}
