// The customer's stack in containers: PostgreSQL and Redis once per test run (tests already keep
// apart there: a database per file, a key prefix per harness), and Apache Kafka once per test
// file, as the dev broker is today, because topic names and consumer groups are fixed by the
// contracts and would mix between files on one shared cluster.
import { PostgreSqlContainer } from "@testcontainers/postgresql";
import { RedisContainer } from "@testcontainers/redis";
import {
  GenericContainer,
  getContainerRuntimeClient,
  RandomPortGenerator,
  type StartedTestContainer,
  Wait,
} from "testcontainers";

export const IMAGES = {
  postgres: "postgres:17-alpine",
  redis: "redis:7.4-alpine",
  kafka: "apache/kafka:4.1.0",
} as const;

export interface StartedStores {
  databaseUrl: string;
  redisUrl: string;
  stop(): Promise<void>;
}

export async function startStoreContainers(): Promise<StartedStores> {
  const [postgres, redis] = await Promise.all([
    new PostgreSqlContainer(IMAGES.postgres)
      .withUsername("postgres")
      .withPassword("postgres")
      .withDatabase("postgres")
      .start(),
    new RedisContainer(IMAGES.redis).start(),
  ]);
  return {
    databaseUrl: postgres.getConnectionUri(),
    redisUrl: redis.getConnectionUrl(),
    async stop() {
      await Promise.all([postgres.stop(), redis.stop()]);
    },
  };
}

export interface StartedKafka {
  brokers: string[];
  stop(): Promise<void>;
}

/**
 * One Apache Kafka broker in KRaft mode (broker and controller in one process), reachable from
 * this host. The advertised address must be the one clients dial, so the host port is chosen
 * before start and bound to the container's listener. Topic auto-creation is off, as on the
 * clusters the services meet: a test that forgot its topics fails as production would.
 */
export async function startKafkaContainer(): Promise<StartedKafka> {
  const runtime = await getContainerRuntimeClient();
  const host = runtime.info.containerRuntime.host;
  const hostPort = await new RandomPortGenerator().generatePort();
  const container: StartedTestContainer = await new GenericContainer(IMAGES.kafka)
    .withExposedPorts({ container: 9092, host: hostPort })
    .withEnvironment({
      KAFKA_NODE_ID: "1",
      KAFKA_PROCESS_ROLES: "broker,controller",
      KAFKA_CONTROLLER_QUORUM_VOTERS: "1@localhost:9093",
      KAFKA_CONTROLLER_LISTENER_NAMES: "CONTROLLER",
      KAFKA_LISTENERS: "EXTERNAL://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093,INTERNAL://0.0.0.0:9094",
      KAFKA_ADVERTISED_LISTENERS: `EXTERNAL://${host}:${hostPort},INTERNAL://localhost:9094`,
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP:
        "EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT",
      KAFKA_INTER_BROKER_LISTENER_NAME: "INTERNAL",
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: "false",
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: "1",
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: "1",
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: "1",
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: "0",
      // Tests run consumers with short sessions, as against the dev broker.
      KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS: "1000",
    })
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
    .withStartupTimeout(120_000)
    .start();
  return {
    brokers: [`${host}:${hostPort}`],
    async stop() {
      await container.stop();
    },
  };
}
