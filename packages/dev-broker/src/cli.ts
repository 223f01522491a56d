// Usage: node packages/dev-broker/src/cli.ts [--port 9092] [--host 127.0.0.1] [--data-dir .data/kafka]
//        [--log-level info] [--auto-create-topics] [--default-partitions 1] [--in-memory]
//        [--security-protocol PLAINTEXT] [--ssl-key F --ssl-cert F [--ssl-ca F]
//        [--ssl-client-auth none]] [--sasl-mechanisms M,...] [--sasl-users u:p,... | --sasl-users-file F]
//        [--protocol-floor kafka-4.0]
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { type BrokerOptions, type RunningBroker, startBroker } from "./broker.ts";
import { isLogLevel, LOG_LEVELS } from "./logger.ts";
import { isProtocolFloor, PROTOCOL_FLOORS } from "./protocol/floor.ts";
import {
  CLIENT_AUTH_MODES,
  type ClientAuth,
  isClientAuth,
  isSecurityProtocol,
  SECURITY_PROTOCOLS,
} from "./security/listener.ts";
import { isSaslMechanism, parseSaslUsers, SASL_MECHANISMS } from "./security/sasl.ts";

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
    "security-protocol": { type: "string", default: "PLAINTEXT" },
    "ssl-key": { type: "string" },
    "ssl-cert": { type: "string" },
    "ssl-ca": { type: "string" },
    "ssl-client-auth": { type: "string", default: "none" },
    "sasl-mechanisms": { type: "string", default: SASL_MECHANISMS.join(",") },
    "sasl-users": { type: "string" },
    "sasl-users-file": { type: "string" },
    "protocol-floor": { type: "string", default: "kafka-4.0" },
    help: { type: "boolean", default: false },
  },
  strict: true,
});

if (values.help) {
  process.stderr.write(
    "dev-broker [--port 9092] [--host 127.0.0.1] [--advertised-host H] [--data-dir .data/kafka]\n" +
      "           [--in-memory] [--log-level silent|error|warn|info|debug] [--auto-create-topics]\n" +
      "           [--default-partitions 1] [--min-session-timeout-ms 6000]\n" +
      "           [--initial-rebalance-delay-ms 0]\n" +
      `           [--security-protocol ${SECURITY_PROTOCOLS.join("|")}]\n` +
      "           [--ssl-key key.pem --ssl-cert cert.pem [--ssl-ca ca.pem]\n" +
      `            [--ssl-client-auth ${CLIENT_AUTH_MODES.join("|")}]]\n` +
      `           [--sasl-mechanisms ${SASL_MECHANISMS.join(",")}]\n` +
      "           [--sasl-users name:password,... | --sasl-users-file users.txt]\n" +
      `           [--protocol-floor ${PROTOCOL_FLOORS.join("|")}]\n`,
  );
  process.exit(0);
}

function fail(message: string): never {
  process.stderr.write(`dev-broker: ${message}\n`);
  process.exit(2);
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

const securityProtocol = values["security-protocol"];
if (!isSecurityProtocol(securityProtocol)) {
  fail(`--security-protocol must be one of ${SECURITY_PROTOCOLS.join(", ")}`);
}
const clientAuthFlag = values["ssl-client-auth"];
if (!isClientAuth(clientAuthFlag)) {
  fail(`--ssl-client-auth must be one of ${CLIENT_AUTH_MODES.join(", ")}`);
}
const clientAuth: ClientAuth = clientAuthFlag;
const protocolFloor = values["protocol-floor"];
if (!isProtocolFloor(protocolFloor)) {
  fail(`--protocol-floor must be one of ${PROTOCOL_FLOORS.join(", ")}`);
}

function tlsOption(): Pick<BrokerOptions, "tls"> {
  const key = values["ssl-key"];
  const cert = values["ssl-cert"];
  const ca = values["ssl-ca"];
  if (key === undefined && cert === undefined && ca === undefined) {
    return {};
  }
  if (key === undefined || cert === undefined) {
    fail("--ssl-key and --ssl-cert go together");
  }
  return { tls: { key, cert, ...(ca === undefined ? {} : { ca }), clientAuth } };
}

function saslOption(): Pick<BrokerOptions, "sasl"> {
  const inline = values["sasl-users"];
  const file = values["sasl-users-file"];
  if (inline === undefined && file === undefined) {
    return {};
  }
  const mechanisms = values["sasl-mechanisms"].split(",").map((m) => m.trim().toUpperCase());
  const unknown = mechanisms.filter((m) => !isSaslMechanism(m));
  if (unknown.length > 0) {
    fail(`--sasl-mechanisms: unknown ${unknown.join(", ")} (known: ${SASL_MECHANISMS.join(", ")})`);
  }
  const users = new Map<string, string>();
  try {
    if (inline !== undefined) {
      for (const [name, password] of parseSaslUsers(inline.split(","), "--sasl-users")) {
        users.set(name, password);
      }
    }
    if (file !== undefined) {
      const lines = readFileSync(file, "utf8").split(/\r?\n/);
      for (const [name, password] of parseSaslUsers(lines, `--sasl-users-file ${file}`)) {
        users.set(name, password);
      }
    }
  } catch (error) {
    fail((error as Error).message);
  }
  return { sasl: { mechanisms: mechanisms.filter(isSaslMechanism), users } };
}

const dataDir = values["in-memory"] ? undefined : resolve(values["data-dir"]);
let broker: RunningBroker;
try {
  broker = await startBroker({
    port: integer("port", values.port),
    host: values.host,
    ...(values["advertised-host"] === undefined
      ? {}
      : { advertisedHost: values["advertised-host"] }),
    ...(dataDir === undefined ? {} : { dataDir }),
    logLevel,
    autoCreateTopics: values["auto-create-topics"],
    defaultPartitions: integer("default-partitions", values["default-partitions"]),
    minSessionTimeoutMs: integer("min-session-timeout-ms", values["min-session-timeout-ms"]),
    initialRebalanceDelayMs: integer(
      "initial-rebalance-delay-ms",
      values["initial-rebalance-delay-ms"],
    ),
    securityProtocol,
    ...tlsOption(),
    ...saslOption(),
    protocolFloor,
  });
} catch (error) {
  fail(`cannot start: ${(error as Error).message}`);
}

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
  `dev-broker ready on ${broker.brokers[0]} (data: ${dataDir ?? "in-memory"}, ` +
    `${broker.securityProtocol}, protocol floor ${protocolFloor})\n`,
);
