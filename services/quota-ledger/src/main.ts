import { contracts } from "@th/contracts";
import { runService } from "@th/service-kit";
import { buildApp } from "./app.ts";
import { readConfig } from "./config.ts";
import { migrations } from "./db/migrations.ts";

const config = readConfig();

await runService(
  {
    name: "quota-ledger",
    config,
    migrations,
    topics: [contracts.leadViewRecorded, contracts.tenantChanged],
    port: config.PORT,
    host: config.HOST,
    build: buildApp,
  },
  process.argv.slice(2),
);
