import { Bus } from "@th/bus";
import { configOrExit, kafkaConnection } from "@th/config";
import { contracts } from "@th/contracts";
import { createPool } from "@th/db";
import { runService } from "@th/service-kit";
import { createLogger } from "@th/telemetry";
import { Redis } from "ioredis";
import { buildApp } from "./app.ts";
import { type Config, readConfig } from "./config.ts";
import { formatRebuildReport, rebuildLedger } from "./consumers/rebuild.ts";
import { migrations } from "./db/migrations.ts";

const config = configOrExit(() => readConfig());
const argv = process.argv.slice(2);

/**
 * `node src/main.ts rebuild [--apply]`: replay, prove equality, re-seed Redis; on a mismatch exit
 * 1 having repaired nothing, or with `--apply` swap the rebuilt ledger in and exit 0.
 */
async function rebuild(config: Config, apply: boolean): Promise<number> {
  // Before any other connection: a stopped broker or a wrong password is one clear line, not a
  // minute of client retries.
  const probe = new Bus({
    ...kafkaConnection(config),
    clientId: "quota-ledger-rebuild",
    logger: createLogger({ service: "quota-ledger-rebuild", level: "silent" }),
  });
  const kafkaProblem = await probe.checkConnection();
  await probe.close();
  if (kafkaProblem) {
    console.error(`rebuild not started: ${kafkaProblem.line}`);
    return 2;
  }
  const logger = createLogger({ service: "quota-ledger-rebuild", level: config.LOG_LEVEL });
  const pool = createPool({
    url: config.DATABASE_URL,
    schema: migrations.schema,
    applicationName: "quota-ledger-rebuild",
    max: 16,
  });
  const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 3 });
  const bus = new Bus({ ...kafkaConnection(config), clientId: "quota-ledger-rebuild", logger });
  try {
    await bus.requireTopics([contracts.leadViewRecorded, contracts.leadViewVoided]);
    const report = await rebuildLedger({
      pool,
      bus,
      redis,
      liveCatchUpTimeoutMs: config.REBUILD_LIVE_CATCH_UP_TIMEOUT_MS,
      apply,
    });
    for (const line of formatRebuildReport(report)) {
      console.info(line);
    }
    return report.equal || report.applied ? 0 : 1;
  } catch (error) {
    console.error(`rebuild failed: ${(error as Error).message}`);
    return 2;
  } finally {
    await bus.close();
    redis.disconnect();
    await pool.end();
  }
}

if (argv[0] === "rebuild") {
  process.exitCode = await rebuild(config, argv.slice(1).includes("--apply"));
} else {
  await runService(
    {
      name: "quota-ledger",
      config,
      migrations,
      topics: [contracts.leadViewRecorded, contracts.leadViewVoided, contracts.tenantChanged],
      port: config.PORT,
      host: config.HOST,
      // It compares and re-seeds the lead-view counters kept in Redis.
      usesRedis: true,
      build: buildApp,
    },
    argv,
  );
}
