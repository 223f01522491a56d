import { configOrExit } from "@th/config";
import { runService } from "@th/service-kit";
import { buildApp, DISPATCHER_TOPICS } from "./app.ts";
import { readConfig } from "./config.ts";
import { migrations } from "./db/migrations.ts";

const config = configOrExit(() => readConfig());

await runService(
  {
    name: "webhook-dispatcher",
    config,
    migrations,
    topics: DISPATCHER_TOPICS,
    port: config.PORT,
    host: config.HOST,
    // Its tenant slots, instance membership and lead-view reservations live in Redis.
    usesRedis: true,
    build: (deps) => buildApp(deps),
  },
  process.argv.slice(2),
);
