import { configOrExit } from "@th/config";
import { contracts, deliveryRetryLadder } from "@th/contracts";
import { runService } from "@th/service-kit";
import { buildApp } from "./app.ts";
import { readConfig } from "./config.ts";
import { migrations } from "./db/migrations.ts";

const config = configOrExit(() => readConfig());

await runService(
  {
    name: "webhook-dispatcher",
    config,
    migrations,
    topics: [
      contracts.matchFound,
      contracts.deliveryAttempted,
      ...deliveryRetryLadder.map((stage) => stage.contract),
      contracts.deliveryDeadLetter,
      contracts.leadViewRecorded,
      contracts.tenantChanged,
      contracts.keyRevoked,
    ],
    port: config.PORT,
    host: config.HOST,
    build: (deps) => buildApp(deps),
  },
  process.argv.slice(2),
);
