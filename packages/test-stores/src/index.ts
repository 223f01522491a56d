// What test fixtures use: a Kafka cluster for one test file, and the Redis of this test run,
// from whichever stores the global setup chose (./choice.ts).
import { startBroker } from "@th/dev-broker";
import { resolvedMode } from "./choice.ts";

export {
  chooseTestStores,
  REQUEST_VAR,
  RESOLVED_VAR,
  resolvedMode,
  type TestStoresChoice,
  type TestStoresMode,
} from "./choice.ts";

export interface TestKafka {
  readonly brokers: string[];
  stop(): Promise<void>;
}

/**
 * A Kafka cluster of this test file's own: an Apache Kafka container when the run uses
 * containers, else an in-memory dev broker on a free port.
 */
export async function startTestKafka(): Promise<TestKafka> {
  if (resolvedMode() === "containers") {
    // Loaded only here: runs without containers never load the Docker client.
    const { startKafkaContainer } = await import("./containers.ts");
    return startKafkaContainer();
  }
  const broker = await startBroker({ port: 0 });
  return { brokers: broker.brokers, stop: () => broker.stop() };
}

export { closeTestRedis, openTestRedis, testRedisUrl } from "./redis.ts";
