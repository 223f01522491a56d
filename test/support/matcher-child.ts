// A matcher in its own process, for scale-out tests and benches: matching only (no projection),
// everything from the environment. Prints "ready" once its consumers run; SIGTERM drains it.
import { Bus } from "@th/bus";
import { kafkaConnection } from "@th/config";
import { createPool } from "@th/db";
import { buildApp } from "@th/matcher/app";
import { readConfig } from "@th/matcher/config";
import { createLogger } from "@th/telemetry";

const config = readConfig(process.env);
const logger = createLogger({ service: "matcher-child", level: "fatal" });
const pool = createPool({ url: config.DATABASE_URL, schema: "matcher", max: 8 });
const bus = new Bus({ ...kafkaConnection(config), clientId: `matcher-${process.pid}`, logger });
// The matcher never touches Redis.
const app = await buildApp(
  { config, logger, pool, redis: undefined as never, bus },
  { projection: false },
);
await app.start();
process.stdout.write("ready\n");
process.once("SIGTERM", async () => {
  await app.stop();
  await bus.close();
  await pool.end();
  process.exit(0);
});
