import { contracts } from "@th/contracts";
import { runService } from "@th/service-kit";
import { buildApp } from "./app.ts";
import { readConfig } from "./config.ts";
import { migrations } from "./db/migrations.ts";

const config = readConfig();

await runService(
  {
    name: "webhook-dispatcher",
    config,
    migrations,
    topics: [
      contracts.matchFound,
      contracts.deliveryAttempted,
      contracts.deliveryRetry1s,
      contracts.deliveryRetry5s,
      contracts.deliveryRetry30s,
      contracts.deliveryRetry5m,
      contracts.deliveryDeadLetter,
    ],
    port: config.PORT,
    host: config.HOST,
    build: buildApp,
  },
  process.argv.slice(2),
);
