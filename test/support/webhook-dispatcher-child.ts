// A dispatcher in its own process, for the kill -9 and two-process tests. It shares the parent's
// database, Redis prefix and dev broker; everything comes from the environment.
import { Bus } from "@th/bus";
import { kafkaConnection } from "@th/config";
import { createPool } from "@th/db";
import { unavailableStore } from "@th/service-kit";
import { TEST_CONSUMER_TIMINGS } from "@th/service-kit/testing";
import { createLogger } from "@th/telemetry";
import { buildApp } from "@th/webhook-dispatcher/app";
import { readConfig } from "@th/webhook-dispatcher/config";
import { Redis } from "ioredis";

const config = readConfig(process.env);
const logger = createLogger({ service: "dispatcher-child", level: "fatal" });
const redis = new Redis(config.REDIS_URL, { keyPrefix: process.env.REDIS_PREFIX ?? "" });
// A name of its own, so an outage test can terminate this process's backends and no one else's.
// The pool's size is the service's own (`createPool`'s default), so benches measure the process
// as it runs in production: more connections per instance cost Postgres CPU on a small machine.
const pool = createPool({
  url: config.DATABASE_URL,
  schema: "dispatcher",
  applicationName: `dispatcher-child-${process.pid}`,
});
// Tests poll with short timings, so that a killed member's partitions move quickly; benches
// (CHILD_SERVICE_TIMINGS=1) measure the service's own, as an idle poll costs CPU under a quota.
const bus = new Bus({
  ...kafkaConnection(config),
  clientId: `child-${process.pid}`,
  logger,
  ...(process.env.CHILD_SERVICE_TIMINGS === "1" ? {} : { consumerTimings: TEST_CONSUMER_TIMINGS }),
  isUnavailable: (error) => unavailableStore(error) !== undefined,
});
const app = await buildApp(
  { config, logger, pool, redis, bus },
  {
    watchlists: { owns: async () => true },
    // The scale-out bench's one-busy control keeps the members without tenants idle.
    helpOthers: process.env.CHILD_HELP_OTHERS !== "0",
    // Seeded from the quota ledger at LEDGER_URL when the parent stack runs one.
    ...(process.env.TEST_LEDGER_SEEDS === "1"
      ? {}
      : { loadUsage: async () => ({ used: 0, foliosToday: [] }) }),
  },
);
await app.start();
process.stdout.write("ready\n");
process.on("SIGTERM", async () => {
  await app.stop();
  await bus.close();
  await pool.end();
  redis.disconnect();
  process.exit(0);
});
