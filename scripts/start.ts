// `npm start`: migrations, the dev broker and every service as separate processes under one
// supervisor. Logs are prefixed and coloured per process; a process that dies stops everything
// loudly (nothing restarts silently); Ctrl-C stops all of them gracefully.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { connect, createServer } from "node:net";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { ensureDashboardBuilt } from "../packages/dashboard/src/build.ts";
import { GATEWAY_NODE_FLAGS } from "../services/gateway/src/heap.ts";
import { seedDemo } from "./demo.ts";
import { runNodeToEnd } from "./run-to-end.ts";

const root = join(import.meta.dirname, "..");
const env = process.env;
const GATEWAY_PORT = Number(env.GATEWAY_PORT ?? 8080);
const BROKER_PORT = Number(env.BROKER_PORT ?? 9092);
const externalKafka = Boolean(env.KAFKA_BROKERS);
const kafkaBrokers = env.KAFKA_BROKERS ?? `127.0.0.1:${BROKER_PORT}`;

interface ServiceEntry {
  name: string;
  port: number;
  internalPort: number;
  /** Flags V8 reads only at startup, before the service's script. */
  nodeFlags?: readonly string[];
}

const services: ServiceEntry[] = [
  { name: "keys", port: 8081, internalPort: 9081 },
  { name: "quota-ledger", port: 8082, internalPort: 9082 },
  { name: "parcels", port: 8083, internalPort: 9083 },
  { name: "matcher", port: 8084, internalPort: 9084 },
  { name: "webhook-dispatcher", port: 8085, internalPort: 9085 },
  { name: "pipeline", port: 8086, internalPort: 9086 },
  { name: "gateway", port: GATEWAY_PORT, internalPort: 9080, nodeFlags: GATEWAY_NODE_FLAGS },
].map((service) => ({
  ...service,
  port: Number(env[`${service.name.toUpperCase().replaceAll("-", "_")}_PORT`] ?? service.port),
  internalPort: Number(
    env[`${service.name.toUpperCase().replaceAll("-", "_")}_INTERNAL_PORT`] ?? service.internalPort,
  ),
}));

const COLOURS = [36, 35, 33, 32, 34, 96, 95, 93];
const LEVELS: Record<number, string> = {
  10: "trace",
  20: "debug",
  30: "info",
  40: "WARN",
  50: "ERROR",
  60: "FATAL",
};
const children = new Map<string, ChildProcess>();
let stopping = false;

function say(message: string) {
  process.stdout.write(`\u001b[1m[start]\u001b[0m ${message}\n`);
}

/** Pino lines become `level message key=value`; anything else passes through as is. */
function formatLine(line: string): string {
  if (!line.startsWith("{")) {
    return line;
  }
  try {
    const { level, msg, time, pid, hostname, service, name, ...rest } = JSON.parse(line) as Record<
      string,
      unknown
    >;
    const extra = Object.entries(rest)
      .map(([key, value]) => `${key}=${typeof value === "string" ? value : JSON.stringify(value)}`)
      .join(" ");
    return `${LEVELS[level as number] ?? level} ${msg ?? ""}${extra ? ` \u001b[2m${extra}\u001b[0m` : ""}`;
  } catch {
    return line;
  }
}

/** This process's environment and a service's own settings; the gateway keeps no database. */
function serviceEnvironment(name: string, extraEnv: Record<string, string>): NodeJS.ProcessEnv {
  const merged: NodeJS.ProcessEnv = { ...env, ...extraEnv };
  if (name === "gateway") {
    delete merged.DATABASE_URL;
  }
  return merged;
}

function launch(name: string, args: string[], extraEnv: Record<string, string>, colour: number) {
  // Each process in a group of its own: Ctrl-C signals the terminal's whole foreground group,
  // and the services must hear of it once, from here, before the broker stops (see stopAll).
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: serviceEnvironment(name, extraEnv),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const prefix = `\u001b[${colour}m${name.padEnd(18)}\u001b[0m|`;
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on("line", (line) => {
      process.stdout.write(`${prefix} ${formatLine(line)}\n`);
    });
  }
  child.on("exit", (code, signal) => {
    children.delete(name);
    if (!stopping) {
      say(`\u001b[31m${name} exited (${signal ?? `code ${code}`}); stopping everything\u001b[0m`);
      void stopAll(1);
    }
  });
  children.set(name, child);
  return child;
}

function runToEnd(name: string, args: string[], extraEnv: Record<string, string>): Promise<void> {
  return runNodeToEnd(args, {
    cwd: root,
    env: { ...env, ...extraEnv },
    failure: (output) => `${name} failed:\n${output.split("\n").map(formatLine).join("\n")}`,
  });
}

async function waitForReady(url: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !stopping) {
    try {
      const response = await fetch(url);
      if (response.ok) {
        return true;
      }
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

function stopChildren(names: string[], graceMs: number): Promise<void> {
  const exits = names.flatMap((name) => {
    const child = children.get(name);
    if (!child) {
      return [];
    }
    return [
      new Promise<void>((resolve) => {
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
    ];
  });
  const timeout = setTimeout(() => {
    for (const name of names) {
      children.get(name)?.kill("SIGKILL");
    }
  }, graceMs);
  return Promise.all(exits).then(() => clearTimeout(timeout));
}

/** Services first, so they commit their offsets and finish their work; the broker last. */
async function stopAll(code: number) {
  if (stopping) {
    return;
  }
  stopping = true;
  say("stopping all processes");
  await stopChildren(
    [...children.keys()].filter((name) => name !== "dev-broker"),
    20_000,
  );
  await stopChildren(["dev-broker"], 10_000);
  process.exit(code);
}

process.on("SIGINT", () => void stopAll(0));
process.on("SIGTERM", () => void stopAll(0));
// A closed terminal: its hang-up no longer reaches the services, which are in groups of their own.
process.on("SIGHUP", () => void stopAll(0));
// The children are in groups of their own, so nothing else would stop them if this process died.
process.on("exit", () => {
  for (const child of children.values()) {
    child.kill("SIGKILL");
  }
});

/** Resolves true once something accepts connections on 127.0.0.1:`port`, false after `timeoutMs`. */
async function brokerListening(port: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !stopping) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: "127.0.0.1", port });
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) {
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}

/** Whether binding `port` on `host` fails because something listens there already. */
function portTaken(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", (error: NodeJS.ErrnoException) => resolve(error.code === "EADDRINUSE"));
    probe.listen(port, host, () => probe.close(() => resolve(false)));
  });
}

// A second `npm start`, or anything else on one of these ports, would otherwise surface as one
// process's stack trace after the dashboard build and the migrations.
const variableOf = (name: string) => name.toUpperCase().replaceAll("-", "_");
const wantedPorts = [
  ...(externalKafka
    ? []
    : [{ port: BROKER_PORT, what: "the dev broker", variable: "BROKER_PORT" }]),
  ...services.flatMap((service) => [
    { port: service.port, what: service.name, variable: `${variableOf(service.name)}_PORT` },
    {
      port: service.internalPort,
      what: `${service.name}'s probes`,
      variable: `${variableOf(service.name)}_INTERNAL_PORT`,
    },
  ]),
];
const takenPorts: typeof wantedPorts = [];
for (const wanted of wantedPorts) {
  if (await portTaken(wanted.port, env.HOST ?? "127.0.0.1")) {
    takenPorts.push(wanted);
  }
}
if (takenPorts.length > 0) {
  for (const taken of takenPorts) {
    say(
      `\u001b[31mport ${taken.port} (${taken.what}) is in use\u001b[0m; choose another with ${taken.variable}`,
    );
  }
  say("is Terminal House running already? Ctrl-C where it runs stops it");
  process.exit(1);
}

say("building the dashboard when its sources changed");
await ensureDashboardBuilt({ log: say });

say("applying migrations");
await Promise.all(
  services.map((service) =>
    runToEnd(
      `${service.name} migrate`,
      [join("services", service.name, "src", "main.ts"), "migrate"],
      {},
    ),
  ),
).catch((error: Error) => {
  say(error.message);
  process.exit(1);
});

if (!externalKafka) {
  const dataDir = env.BROKER_DATA_DIR ?? join(root, ".data", "kafka");
  mkdirSync(dataDir, { recursive: true });
  launch(
    "dev-broker",
    ["packages/dev-broker/src/cli.ts", "--port", String(BROKER_PORT), "--data-dir", dataDir],
    {},
    90,
  );
}

// Services never create topics: the plan is applied before any of them starts. The dev broker
// has one node, so the plan is sized for one; an external cluster gets the production plan
// unless TOPICS_REPLICATION_FACTOR / TOPICS_MIN_INSYNC_REPLICAS say otherwise.
if (!externalKafka && !(await brokerListening(BROKER_PORT, 30_000))) {
  say(`\u001b[31mthe dev broker does not answer on port ${BROKER_PORT} after 30 s\u001b[0m`);
  await stopAll(1);
}
say("applying the topic plan");
await runToEnd(
  "topics --apply",
  ["packages/topics/src/cli.ts", "--apply"],
  externalKafka
    ? {}
    : {
        KAFKA_BROKERS: kafkaBrokers,
        TOPICS_REPLICATION_FACTOR: "1",
        TOPICS_MIN_INSYNC_REPLICAS: "1",
      },
).catch(async (error: Error) => {
  say(error.message);
  await stopAll(1);
});

const portOf = (name: string) => services.find((service) => service.name === name)?.port;
const upstreamUrls = {
  KEYS_URL: `http://127.0.0.1:${portOf("keys")}`,
  LEDGER_URL: `http://127.0.0.1:${portOf("quota-ledger")}`,
  PARCELS_URL: `http://127.0.0.1:${portOf("parcels")}`,
  MATCHER_URL: `http://127.0.0.1:${portOf("matcher")}`,
  DISPATCHER_URL: `http://127.0.0.1:${portOf("webhook-dispatcher")}`,
  PIPELINE_URL: `http://127.0.0.1:${portOf("pipeline")}`,
};

// A developer's own receiver (http://127.0.0.1:3000/hooks) gets real signed deliveries without a
// tunnel: the dispatcher of a development run may deliver plain HTTP to loopback. Production
// refuses the flag (and `npm start` never sets it there).
const loopbackWebhooks =
  env.NODE_ENV !== "production" && env.WEBHOOK_ALLOW_LOOPBACK_HTTP !== "false";
// One developer on loopback starts every trial of a development run, the demo tenant's at each
// start among them: the per-address and per-domain trial windows, kept in Redis across runs, are
// for the internet and would refuse the demo after a few restarts. A value set here is kept.
const devTrialLimits = {
  TRIAL_STARTS_PER_ADDRESS_PER_HOUR: env.TRIAL_STARTS_PER_ADDRESS_PER_HOUR ?? "10000",
  TRIAL_STARTS_PER_EMAIL_DOMAIN_PER_DAY: env.TRIAL_STARTS_PER_EMAIL_DOMAIN_PER_DAY ?? "10000",
};
const serviceEnv = (name: string): Record<string, string> => {
  if (name === "webhook-dispatcher" && loopbackWebhooks) {
    return { WEBHOOK_ALLOW_LOOPBACK_HTTP: "true" };
  }
  return name === "gateway" && env.NODE_ENV !== "production" ? devTrialLimits : {};
};

services.forEach((service, index) => {
  launch(
    service.name,
    [...(service.nodeFlags ?? []), join("services", service.name, "src", "main.ts")],
    {
      PORT: String(service.port),
      INTERNAL_PORT: String(service.internalPort),
      KAFKA_BROKERS: kafkaBrokers,
      HOST: env.HOST ?? "127.0.0.1",
      ...upstreamUrls,
      ...serviceEnv(service.name),
    },
    COLOURS[index % COLOURS.length] ?? 37,
  );
});

const readiness = await Promise.all(
  services.map(async (service) => ({
    service,
    ready: await waitForReady(`http://127.0.0.1:${service.internalPort}/readyz`, 90_000),
  })),
);
const notReady = readiness.filter((entry) => !entry.ready).map((entry) => entry.service.name);
if (notReady.length > 0) {
  say(`\u001b[31mnot ready after 90 s: ${notReady.join(", ")}\u001b[0m`);
  await stopAll(1);
}

const baseUrl = `http://127.0.0.1:${GATEWAY_PORT}`;
let demoLines: string[];
try {
  demoLines = await seedDemo({
    baseUrl,
    root,
    env: { ...env, ...upstreamUrls, KAFKA_BROKERS: kafkaBrokers },
    say,
  });
} catch (error) {
  say(`\u001b[31m${(error as Error).message}\u001b[0m`);
  demoLines = ["  Demo tenant   could not be created (see above)"];
}
say(
  [
    "\u001b[32mTerminal House is up\u001b[0m",
    `  REST API      ${baseUrl}/v1   (try: curl ${baseUrl}/v1/health)`,
    `  OpenAPI       ${baseUrl}/v1/openapi.json`,
    `  Kafka         ${kafkaBrokers}${externalKafka ? "" : " (dev broker, data in .data/kafka)"}`,
    ...services.map(
      (service) =>
        `  ${service.name.padEnd(19)} readiness http://127.0.0.1:${service.internalPort}/readyz`,
    ),
    ...demoLines,
    ...((env.PAYMENT_PROVIDER ?? "local") === "local"
      ? [
          "  Payments      the built-in test processor (PAYMENT_PROVIDER=local): test cards pm_card_visa, pm_card_declined, pm_card_charge_fails; nothing is charged; production refuses it",
        ]
      : []),
    ...(loopbackWebhooks
      ? [
          "  Webhooks      a plain-HTTP loopback URL (http://127.0.0.1:<port>/…) may be subscribed, for local development only; production refuses it",
        ]
      : []),
    "  Ctrl-C stops everything.",
  ].join("\n"),
);
