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
    build: (deps) => buildApp(deps),
  },
  process.argv.slice(2),
);
