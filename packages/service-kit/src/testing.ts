import { type AnyTopicContract, Bus } from "@th/bus";
import type { MigrationSet } from "@th/db";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { createLogger, type Logger } from "@th/telemetry";
import { closeTestRedis, openTestRedis, startTestKafka, testRedisUrl } from "@th/test-stores";
import { unavailableStore } from "./errors.ts";
import type { CommonConfig, ServiceConfig, ServiceDeps } from "./run-service.ts";

/** Fast group timings so rebalances in tests take a second, not ten. */
export const TEST_CONSUMER_TIMINGS = {
  sessionTimeout: 6000,
  heartbeatInterval: 300,
  maxWaitTimeInMs: 200,
};

/** A test's connections; its config names the test database, whatever the service's declares. */
export interface TestHarness<Config extends ServiceConfig>
  extends ServiceDeps<Config & Pick<CommonConfig, "DATABASE_URL">> {
  db: TestDatabase;
  brokers: string[];
  close(): Promise<void>;
}

/**
 * Real dependencies for one test file: its own database cloned from the migrated template, its
 * own Kafka (an in-memory dev broker on a free port, or an Apache Kafka container when the run
 * uses containers: see @th/test-stores), and Redis under a key prefix nobody else uses.
 */
export async function createTestHarness<Config extends ServiceConfig>(options: {
  config: Config;
  migrations: readonly MigrationSet[];
  topics?: readonly AnyTopicContract[];
  brokers?: string[];
  /** Tests that read what was logged pass their own logger. */
  logger?: Logger;
}): Promise<TestHarness<Config>> {
  const db = await createTestDatabase(options.migrations);
  const broker = options.brokers ? undefined : await startTestKafka();
  const brokers = options.brokers ?? broker?.brokers ?? [];
  const logger = options.logger ?? createLogger({ service: "test", level: "fatal" });
  const redisUrl = testRedisUrl(options.config.REDIS_URL);
  const redis = openTestRedis(options.config.REDIS_URL);
  const bus = new Bus({
    brokers,
    clientId: "test",
    logger,
    consumerTimings: TEST_CONSUMER_TIMINGS,
    isUnavailable: (error) => unavailableStore(error) !== undefined,
  });
  if (options.topics) {
    await bus.provision(options.topics);
  }
  const config: Config & Pick<CommonConfig, "DATABASE_URL"> = {
    ...options.config,
    DATABASE_URL: db.url,
    REDIS_URL: redisUrl,
    KAFKA_BROKERS: brokers,
  };
  return {
    config,
    logger,
    pool: db.pool,
    redis,
    bus,
    db,
    brokers,
    async close() {
      await bus.close();
      await closeTestRedis(redis);
      await db.drop();
      await broker?.stop();
    },
  };
}

export { declaredRoutesOf } from "./app.ts";
export {
  percentEscapeAt,
  signedHeaders,
  signedInject,
  type TestCall,
} from "./signed-calls-testing.ts";
