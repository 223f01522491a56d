import { type AnyTopicContract, Bus, MissingTopicsError } from "@th/bus";
import { type baseShape, type commonShape, kafkaConnection, type z } from "@th/config";
import { createPool, type MigrationSet, migrate, type Pool, pingDatabase } from "@th/db";
import { createLogger, type Logger, startTelemetry } from "@th/telemetry";
import { Redis } from "ioredis";
import type { HttpApp } from "./app.ts";
import { unavailableStore } from "./errors.ts";
import { type ReadinessCheck, startInternalServer } from "./internal-server.ts";
import { stopOnSignals } from "./lifecycle.ts";
import { createMetrics, type Metrics, observeHttpRequests } from "./metrics.ts";
import { registerSecurityHeaders } from "./security-headers.ts";
import { applyServerTimeouts, serverTimeoutsOf } from "./server-timeouts.ts";

/** The config of a service that owns a Postgres schema. */
export type CommonConfig = z.infer<z.ZodObject<typeof commonShape>>;
/** The config every service has, a database URL or not. */
export type ServiceConfig = z.infer<z.ZodObject<typeof baseShape>>;

/** What every service is handed: its config and its connections, never globals. */
export interface ServiceDeps<Config extends CommonConfig> extends StorelessServiceDeps<Config> {
  pool: Pool;
}

/** What a service that owns no Postgres schema (the gateway) is handed: no pool. */
export interface StorelessServiceDeps<Config extends ServiceConfig> {
  config: Config;
  logger: Logger;
  redis: Redis;
  bus: Bus;
  /** The process's Prometheus registry; tests may leave it out. */
  metrics?: Metrics;
}

/** What `buildApp` returns: an HTTP app (optional) and the background work it runs. */
export interface ServiceApp {
  http?: HttpApp;
  /** Starts consumers and timers; called once its topics are known to exist. */
  start(): Promise<void>;
  /** Stops taking work and hands back or finishes what is in flight. */
  stop(): Promise<void>;
}

interface ServiceSpecBase<Config extends ServiceConfig> {
  name: string;
  config: Config;
  /** Topics this service produces or consumes; it refuses to start when one is missing. */
  topics: readonly AnyTopicContract[];
  /** Public (or service-to-service) HTTP port; omitted for services without routes. */
  port?: number;
  host?: string;
  /**
   * Whether the service keeps anything in Redis. One that does not is not made unready by a
   * Redis outage (its readiness checks only the stores it uses) and never connects to Redis.
   */
  usesRedis: boolean;
}

/**
 * A service either owns a Postgres schema (its migrations, and a pool on it) or owns none and
 * gets no pool, so its readiness never waits on Postgres.
 */
export type ServiceSpec<Config extends ServiceConfig> = ServiceSpecBase<Config> &
  (
    | {
        migrations: MigrationSet;
        build(deps: ServiceDeps<Config & CommonConfig>): Promise<ServiceApp>;
      }
    | { migrations?: undefined; build(deps: StorelessServiceDeps<Config>): Promise<ServiceApp> }
  );

/**
 * How every service's Redis connection meets an outage: a command waits at most 1.5 s (queued
 * while reconnecting, or sent to a server that does not answer), then fails and the request
 * answers 503; reconnection backs off from 50 ms to at most 1 s, so service resumes within a
 * second of Redis's return.
 */
export const REDIS_OPTIONS = {
  maxRetriesPerRequest: 3,
  commandTimeout: 1_500,
  retryStrategy: (times: number) => Math.min(50 * 2 ** (times - 1), 1_000),
} as const;

/** Process warnings go to the structured log, like everything else the service says. */
function routeProcessWarnings(logger: Logger) {
  process.removeAllListeners("warning");
  process.on("warning", (warning) => {
    logger.warn({ warning: warning.name }, warning.message);
  });
}

/**
 * The broker may still be starting when a service starts: wait for it rather than crash. A
 * missing topic is no such wait: the topic plan was not applied, and nothing here creates it.
 */
async function requireTopicsWithRetry(
  bus: Bus,
  topics: readonly AnyTopicContract[],
  logger: Logger,
) {
  const deadline = Date.now() + 60_000;
  for (let attempt = 1; ; attempt++) {
    try {
      await bus.requireTopics(topics);
      return;
    } catch (error) {
      if (error instanceof MissingTopicsError || Date.now() > deadline) {
        throw error;
      }
      logger.warn({ attempt, err: error }, "Kafka not ready for the topic check; retrying");
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

/**
 * The one `main` of every service: `node src/main.ts` runs it, `node src/main.ts migrate`
 * applies its migrations and exits (what the deploy's migration job runs).
 */
/** The database URL of a service that owns a schema; its config declares one (commonShape). */
function databaseUrlOf(config: ServiceConfig): string {
  const url = (config as Partial<CommonConfig>).DATABASE_URL;
  if (url === undefined) {
    throw new Error("a service with migrations declares DATABASE_URL in its config (commonShape)");
  }
  return url;
}

/** The process's Redis client; a service that keeps nothing there gets one that never connects. */
function redisOf(config: ServiceConfig, usesRedis: boolean, logger: Logger): Redis {
  const redis = new Redis(config.REDIS_URL, { ...REDIS_OPTIONS, lazyConnect: !usesRedis });
  redis.on("error", (error) => logger.warn({ err: error }, "redis connection error"));
  return redis;
}

/**
 * What `/readyz` waits for: only the stores the service uses. Postgres where it has a pool,
 * Redis where it keeps anything there, Kafka always.
 */
function readinessChecks(stores: {
  pool: Pool | undefined;
  redis: Redis | undefined;
  bus: Bus;
}): Record<string, ReadinessCheck> {
  const { pool, redis, bus } = stores;
  return {
    ...(pool ? { postgres: () => pingDatabase(pool) } : {}),
    ...(redis ? { redis: async () => (await redis.ping()) === "PONG" } : {}),
    kafka: () => bus.ping(),
  };
}

export async function runService<Config extends ServiceConfig>(
  spec: ServiceSpec<Config>,
  argv: readonly string[],
): Promise<void> {
  const { config } = spec;
  const logger = createLogger({ service: spec.name, level: config.LOG_LEVEL });
  routeProcessWarnings(logger);
  if (argv[0] === "migrate") {
    if (!spec.migrations) {
      logger.info("no Postgres schema to migrate");
      return;
    }
    const result = await migrate(databaseUrlOf(config), spec.migrations);
    logger.info({ schema: result.schema, applied: result.applied }, "migrations applied");
    return;
  }
  const telemetry = startTelemetry({
    service: config.OTEL_SERVICE_NAME ?? spec.name,
    enabled: config.OTEL_ENABLED,
    endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
  });
  const pool = spec.migrations
    ? createPool({
        url: databaseUrlOf(config),
        schema: spec.migrations.schema,
        applicationName: spec.name,
        onConnectionError: (error) => logger.warn({ err: error }, "postgres connection lost"),
      })
    : undefined;
  const redis = redisOf(config, spec.usesRedis, logger);
  const bus = new Bus({
    ...kafkaConnection(config),
    clientId: spec.name,
    logger,
    isUnavailable: (error) => unavailableStore(error) !== undefined,
  });
  // Wrong credentials or certificates end the process here in one line; a broker that is still
  // starting is waited for (a minute at most), as provisioning did before.
  const kafkaProblem = await bus.checkConnection({
    waitMs: 60_000,
    onWait: (problem) => logger.warn({ setting: problem.setting }, problem.reason),
  });
  if (kafkaProblem) {
    logger.fatal({ setting: kafkaProblem.setting }, kafkaProblem.line);
    await bus.close();
    redis.disconnect();
    await Promise.allSettled([pool?.end(), telemetry.shutdown()]);
    process.exitCode = 1;
    return;
  }

  const metrics = createMetrics(spec.name);
  // One read of the offsets serves both gauges of a scrape.
  let offsets: { at: number; rows: ReturnType<Bus["consumerLag"]> } | undefined;
  const consumerOffsets = () => {
    if (!offsets || Date.now() - offsets.at > 1_000) {
      offsets = { at: Date.now(), rows: bus.consumerLag() };
    }
    return offsets.rows;
  };
  metrics.gauge(
    "th_consumer_lag",
    "Records not yet processed, by consumer group, topic and partition",
    ["group", "topic", "partition"] as const,
    async (gauge) => {
      gauge.reset();
      for (const row of await consumerOffsets()) {
        gauge.set(
          { group: row.group, topic: row.topic, partition: String(row.partition) },
          row.lag,
        );
      }
    },
  );
  metrics.gauge(
    "th_topic_end_offset",
    "The end offset of each partition this process consumes: its rate is records published per second",
    ["topic", "partition"] as const,
    async (gauge) => {
      gauge.reset();
      for (const row of await consumerOffsets()) {
        gauge.set({ topic: row.topic, partition: String(row.partition) }, row.end);
      }
    },
  );
  const base = { config, logger, redis, bus, metrics };
  // The pool exists exactly when the spec has migrations.
  const app =
    spec.migrations === undefined
      ? await spec.build(base)
      : await spec.build({
          ...base,
          config: config as Config & CommonConfig,
          pool: pool as Pool,
        });
  if (app.http) {
    observeHttpRequests(app.http, metrics);
    // A service whose app set its own (the gateway, with its HSTS setting) keeps them.
    registerSecurityHeaders(app.http, { hsts: false });
  }
  try {
    await requireTopicsWithRetry(bus, spec.topics, logger);
  } catch (error) {
    if (error instanceof MissingTopicsError) {
      // One line, no stack: the operator's next step is in the message.
      logger.fatal({ missing_topics: error.topics }, error.message);
      process.exit(1);
    }
    throw error;
  }
  await app.start();
  // Every server this process opens waits on a slow client only so long.
  const timeouts = serverTimeoutsOf(config);
  if (app.http && spec.port !== undefined) {
    applyServerTimeouts(app.http.server, timeouts);
    await app.http.listen({ port: spec.port, host: spec.host ?? "0.0.0.0" });
  }
  const internal = await startInternalServer({
    port: config.INTERNAL_PORT,
    timeouts,
    metrics,
    checks: readinessChecks({ pool, redis: spec.usesRedis ? redis : undefined, bus }),
  });
  logger.info(
    {
      port: app.http?.server.address() ?? null,
      internal_port: internal.port,
    },
    `${spec.name} ready`,
  );

  stopOnSignals({
    logger,
    onDrain: () => internal.markDraining(),
    service: {
      stop: async () => {
        await app.http?.close();
        await app.stop();
        await bus.close();
        await Promise.allSettled([
          spec.usesRedis ? redis.quit() : redis.disconnect(),
          pool?.end(),
          internal.close(),
          telemetry.shutdown(),
        ]);
      },
    },
  });
}
