// Usage: node packages/dev-broker/src/cli.ts [--port 9092] [--host 127.0.0.1] [--data-dir .data/kafka]
//        [--log-level info] [--auto-create-topics] [--default-partitions 1] [--in-memory]
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { startBroker } from "./broker.ts";
import { isLogLevel, LOG_LEVELS } from "./logger.ts";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "9092" },
    host: { type: "string", default: "127.0.0.1" },
    "advertised-host": { type: "string" },
    "data-dir": { type: "string", default: ".data/kafka" },
    "in-memory": { type: "boolean", default: false },
    "log-level": { type: "string", default: "info" },
    "auto-create-topics": { type: "boolean", default: false },
    "default-partitions": { type: "string", default: "1" },
    "min-session-timeout-ms": { type: "string", default: "6000" },
    "initial-rebalance-delay-ms": { type: "string", default: "0" },
    help: { type: "boolean", default: false },
  },
  strict: true,
});

if (values.help) {
  process.stderr.write(
    "dev-broker [--port 9092] [--host 127.0.0.1] [--advertised-host H] [--data-dir .data/kafka]\n" +
      "           [--in-memory] [--log-level silent|error|warn|info|debug] [--auto-create-topics]\n" +
      "           [--default-partitions 1] [--min-session-timeout-ms 6000]\n" +
      "           [--initial-rebalance-delay-ms 0]\n",
  );
  process.exit(0);
}

function integer(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`--${name} must be a non-negative integer, got ${raw}\n`);
    process.exit(2);
  }
  return n;
}

const logLevel = values["log-level"];
if (!isLogLevel(logLevel)) {
  process.stderr.write(`--log-level must be one of ${LOG_LEVELS.join(", ")}\n`);
  process.exit(2);
}

const dataDir = values["in-memory"] ? undefined : resolve(values["data-dir"]);
const broker = await startBroker({
  port: integer("port", values.port),
  host: values.host,
  ...(values["advertised-host"] === undefined ? {} : { advertisedHost: values["advertised-host"] }),
  ...(dataDir === undefined ? {} : { dataDir }),
  logLevel,
  autoCreateTopics: values["auto-create-topics"],
  defaultPartitions: integer("default-partitions", values["default-partitions"]),
  minSessionTimeoutMs: integer("min-session-timeout-ms", values["min-session-timeout-ms"]),
  initialRebalanceDelayMs: integer(
    "initial-rebalance-delay-ms",
    values["initial-rebalance-delay-ms"],
  ),
});

let shuttingDown = false;
const shutdown = (signal: string): void => {
  if (shuttingDown) {
    return;
  }
  shuttingDown = true;
  process.stderr.write(`dev-broker: ${signal} received, stopping\n`);
  broker.stop().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`dev-broker: stop failed: ${String(error)}\n`);
      process.exit(1);
    },
  );
};
process.on("SIGINT", () => shutdown("SIGINT"));
process.on("SIGTERM", () => shutdown("SIGTERM"));

// Printed only once the signal handlers are in place, so a supervisor may stop us right away.
process.stdout.write(
  `dev-broker ready on ${broker.brokers[0]} (data: ${dataDir ?? "in-memory"})\n`,
);
