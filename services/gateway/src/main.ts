import { configOrExit } from "@th/config";
import { contracts } from "@th/contracts";
import { runService } from "@th/service-kit";
import { buildApp } from "./app.ts";
import { readConfig } from "./config.ts";
import { tuneHeapForRequests } from "./heap.ts";

const config = configOrExit(() => readConfig());
tuneHeapForRequests();

await runService(
  {
    name: "gateway",
    config,
    topics: [
      contracts.leadViewRecorded,
      contracts.leadViewVoided,
      contracts.tenantChanged,
      contracts.keyIssued,
      contracts.keyRevoked,
    ],
    port: config.PORT,
    host: config.HOST,
    // The edge's keys, windows and counters live in Redis.
    usesRedis: true,
    build: buildApp,
  },
  process.argv.slice(2),
);
