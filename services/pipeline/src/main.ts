import { configOrExit } from "@th/config";
import { contracts } from "@th/contracts";
import { runService } from "@th/service-kit";
import { buildApp } from "./app.ts";
import { readConfig } from "./config.ts";
import { migrations } from "./db/migrations.ts";

const config = configOrExit(() => readConfig());

await runService(
  {
    name: "pipeline",
    config,
    migrations,
    topics: [contracts.pipelineItemChanged, contracts.pipelineStageChanged],
    port: config.PORT,
    host: config.HOST,
    // It keeps nothing in Redis, so a Redis outage does not make it unready.
    usesRedis: false,
    build: buildApp,
  },
  process.argv.slice(2),
);
