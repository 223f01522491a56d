// Webhook dispatcher throughput and latency: signed deliveries per second to a loopback receiver
// with one dispatcher process and with two, and match -> receiver latency (p50/p99) at a steady
// 1,000 matches/s. Run from the repository root: node bench/webhook-dispatch.ts [deliveries]
// (BENCH_PHASES=baseline,one,two,latency picks phases; BENCH_PROGRESS=1 prints progress).
// Needs Postgres and Redis (DATABASE_URL, REDIS_URL; the bootstrap's defaults otherwise). The dev
// broker and each dispatcher run in their own processes; the receiver runs here.
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { contracts, type MatchFound } from "@th/contracts";
import { createTestHarness } from "@th/service-kit/testing";
import { verifySignature } from "../packages/webhooks/src/index.ts";
import { buildApp } from "../services/webhook-dispatcher/src/app.ts";
import { readConfig } from "../services/webhook-dispatcher/src/config.ts";
import { migrations } from "../services/webhook-dispatcher/src/db/migrations.ts";
import { DISPATCHER_TOPICS } from "../test/support/dispatcher-topics.ts";
import { cpuMsOf, postgresCpuMsOf, postgresCpuMsSince } from "./support/cpu.ts";
import { benchMatches } from "./support/matches.ts";

const DELIVERIES = Number(process.argv[2] ?? 6_000);
const LATENCY_RATE = 1_000;
const LATENCY_SECONDS = 5;
const BROKER_CLI = fileURLToPath(new URL("../packages/dev-broker/src/cli.ts", import.meta.url));
const CHILD = fileURLToPath(
  new URL("../test/support/webhook-dispatcher-child.ts", import.meta.url),
);
// match.found is keyed by tenant, so one tenant is one partition; the load is spread over
// TENANTS tenants (Custom, 64 concurrent webhooks each) as many tenants' matches would be.
const TENANTS = Array.from(
  { length: Number(process.env.BENCH_TENANTS ?? 24) },
  (_, i) => `tn_bench_${i}`,
);
const ENV = {
  WEBHOOK_ALLOW_LOOPBACK_HTTP: "true",
  LOG_LEVEL: "fatal",
};

function report(label: string, value: string): void {
  process.stdout.write(`${label.padEnd(58)} ${value}\n`);
}

function spawnLine(args: string[], env: Record<string, string>, ready: RegExp) {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise<{ child: ChildProcess; line: string }>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.on("line", (line) => {
      if (ready.test(line)) {
        resolve({ child, line });
      }
    });
    child.once("exit", (code) => reject(new Error(`child exited with ${code}`)));
  });
}

const broker = await spawnLine([BROKER_CLI, "--port", "0", "--log-level", "error"], {}, /ready on/);
const brokerAddress = /ready on (\S+)/.exec(broker.line)?.[1] as string;
const harness = await createTestHarness({
  config: readConfig(ENV),
  migrations: [migrations],
  brokers: [brokerAddress],
  topics: DISPATCHER_TOPICS,
});

// The receiver: counts unique webhook ids, verifies one signature in fifty, keeps latencies.
const seen = new Set<string>();
let latencies: number[] = [];
/** Per webhook id: when its match occurred and when the receiver got it (latency phase). */
let receipts = new Map<string, { occurred: number; at: number }>();
let firstAt = 0;
let verified = 0;
let verifyFailures = 0;
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    if (req.headers["x-bench-baseline"]) {
      JSON.parse(body.toString());
      res.writeHead(200);
      res.end();
      return;
    }
    const id = String(req.headers["x-flpf-webhook-id"]);
    if (!seen.has(id)) {
      seen.add(id);
      firstAt ||= Date.now();
      const payload = JSON.parse(body.toString());
      const occurred = Date.parse(payload.occurred_at);
      latencies.push(Date.now() - occurred);
      receipts.set(id, { occurred, at: Date.now() });
      if (seen.size % 50 === 0) {
        verified++;
        if (
          !verifySignature(body, String(req.headers["x-flpf-signature"]), [
            secrets.get(payload.tenant_id) ?? "",
          ]).ok
        ) {
          verifyFailures++;
        }
      }
    }
    res.writeHead(200);
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const receiverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;

await harness.bus.publish(
  contracts.tenantChanged,
  TENANTS.map((tenant) => ({
    tenant_id: tenant,
    revision: 1,
    tier: "custom" as const,
    status: "active" as const,
    limits: {
      lead_views_per_month: 10_000_000,
      rate_per_minute: 1_200,
      concurrent_webhooks: 64,
      seats: 6,
    },
    billing_anniversary: new Date().toISOString().slice(0, 10),
    trial_ends_at: null,
    changed_at: new Date().toISOString(),
  })),
);
const setup = await buildApp(harness, {
  watchlists: { owns: async () => true },
  loadUsage: async () => ({ used: 0, foliosToday: [] }),
});
const secrets = new Map<string, string>();
for (const tenant of TENANTS) {
  const endpoint = await setup.endpoints.create(
    { tenantId: tenant, memberId: "mb_bench", keyId: "key_bench" },
    "wl_bench",
    { url: receiverUrl, events: ["watchlist.match"] },
  );
  secrets.set(tenant, endpoint.secret);
}

function matches(count: number): MatchFound[] {
  return benchMatches(count, TENANTS, { id: "wl_bench", name: "Bench" });
}

const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of [...running, broker.child]) {
    child.kill("SIGKILL");
  }
});

async function dispatchers(count: number): Promise<ChildProcess[]> {
  const children: ChildProcess[] = [];
  for (let i = 0; i < count; i++) {
    const { child } = await spawnLine(
      [CHILD],
      {
        ...ENV,
        DATABASE_URL: harness.db.url,
        REDIS_URL: harness.config.REDIS_URL,
        REDIS_PREFIX: harness.redis.options.keyPrefix ?? "",
        KAFKA_BROKERS: brokerAddress,
        NODE_ENV: "test",
      },
      /ready/,
    );
    children.push(child);
    running.add(child);
    child.once("exit", () => running.delete(child));
  }
  // Let the consumer group settle and the tenant projection land before measuring.
  for (;;) {
    const { rows } = await harness.db.pool.query("SELECT count(*)::int AS n FROM tenants");
    if (rows[0]?.n === TENANTS.length) {
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  return children;
}

async function stopAll(children: ChildProcess[]) {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          child.once("exit", () => resolve());
          child.kill("SIGTERM");
        }),
    ),
  );
}

async function waitForCount(target: number, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  let nextProgress = Date.now() + 1000;
  while (seen.size < target && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    if (process.env.BENCH_PROGRESS && Date.now() > nextProgress) {
      nextProgress += 1000;
      const { rows } = await harness.db.pool.query(
        "SELECT state, count(*)::int AS n FROM deliveries GROUP BY state ORDER BY state",
      );
      report("progress", `received ${seen.size}; rows ${JSON.stringify(rows)}`);
    }
  }
  return seen.size >= target;
}

async function burst(instances: number): Promise<number> {
  const children = await dispatchers(instances);
  seen.clear();
  firstAt = 0;
  const batch = matches(DELIVERIES);
  const completeBefore = await completeCount();
  const cpuBefore = children.map((child) => cpuMsOf(child.pid));
  const database = new URL(harness.db.url).pathname.slice(1);
  const postgresBefore = postgresCpuMsOf(database);
  const publishStarted = Date.now();
  for (let i = 0; i < batch.length; i += 1_000) {
    await harness.bus.publish(contracts.matchFound, batch.slice(i, i + 1_000));
  }
  const complete = await waitForCount(DELIVERIES, 180_000);
  const lastAt = Date.now();
  // Rows recorded complete, not only requests received: the attempt records are part of the work.
  await waitForComplete(completeBefore + DELIVERIES, 30_000);
  const postgres = postgresCpuMsSince(database, postgresBefore) / 1000;
  const cpu =
    children.reduce((sum, child, i) => sum + cpuMsOf(child.pid) - (cpuBefore[i] ?? 0), 0) / 1000;
  const seconds = (lastAt - firstAt) / 1000;
  const rate = seen.size / seconds;
  report(
    `${instances} instance(s): ${seen.size}/${DELIVERIES} signed deliveries`,
    `${rate.toFixed(0)}/s (${seconds.toFixed(2)} s from first receipt; publish->last ${((lastAt - publishStarted) / 1000).toFixed(2)} s)${complete ? "" : " INCOMPLETE"}`,
  );
  report(
    `  dispatcher CPU per delivery (${instances} process(es))`,
    `${((cpu * 1000) / DELIVERIES).toFixed(3)} ms (${cpu.toFixed(1)} s over ${instances} process(es))`,
  );
  report(
    "  Postgres CPU per delivery (this database's backends)",
    `${((postgres * 1000) / DELIVERIES).toFixed(3)} ms`,
  );
  await stopAll(children);
  return rate;
}

/** CPU seconds used so far by each backend connected to the bench's database. */
async function completeCount(): Promise<number> {
  const { rows } = await harness.db.pool.query(
    "SELECT count(*)::int AS n FROM deliveries WHERE state = 'complete'",
  );
  return rows[0]?.n ?? 0;
}

async function waitForComplete(target: number, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await completeCount()) >= target) {
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

async function latency(instances: number) {
  const children = await dispatchers(instances);
  seen.clear();
  latencies = [];
  receipts = new Map();
  const total = LATENCY_RATE * LATENCY_SECONDS;
  const tickMs = 50;
  const perTick = (LATENCY_RATE * tickMs) / 1000;
  const started = Date.now();
  for (let sent = 0; sent < total; sent += perTick) {
    const due = started + (sent / LATENCY_RATE) * 1000;
    const wait = due - Date.now();
    if (wait > 0) {
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
    await harness.bus.publish(contracts.matchFound, matches(perTick));
  }
  await waitForCount(total, 60_000);
  report(
    `match -> receiver at ${LATENCY_RATE}/s for ${LATENCY_SECONDS} s, ${instances} instance(s)`,
    `p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms, max ${Math.max(...latencies)} ms (${seen.size}/${total})`,
  );
  // Split at the delivery row's creation: Kafka and the intake before, the dispatcher after.
  const { rows } = await harness.db.pool.query<{ id: string; created_at: Date }>(
    "SELECT id, created_at FROM deliveries WHERE id = ANY($1::uuid[])",
    [[...receipts.keys()]],
  );
  const intake: number[] = [];
  const dispatch: number[] = [];
  for (const row of rows) {
    const receipt = receipts.get(row.id);
    if (receipt) {
      intake.push(row.created_at.getTime() - receipt.occurred);
      dispatch.push(receipt.at - row.created_at.getTime());
    }
  }
  report(
    "  of which match -> delivery row (Kafka, intake)",
    `p50 ${percentile(intake, 50)} ms, p99 ${percentile(intake, 99)} ms`,
  );
  report(
    "  of which delivery row -> receiver (dispatch)",
    `p50 ${percentile(dispatch, 50)} ms, p99 ${percentile(dispatch, 99)} ms`,
  );
  await stopAll(children);
}

// What this machine can do right now without the dispatcher: one process POSTing signed bodies
// of the same size to the same receiver over keep-alive connections, 256 at a time. The machine
// is shared and noisy; the dispatcher's rate as a fraction of this is the steadier figure.
const BASELINE = `
import http from "node:http";
import { createHmac } from "node:crypto";
const [url, total, bodyText] = process.argv.slice(-3);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const body = Buffer.from(bodyText);
let sent = 0;
const started = performance.now();
function one() {
  if (sent >= Number(total)) return Promise.resolve();
  sent++;
  const t = Math.floor(Date.now() / 1000);
  const signature = createHmac("sha256", "whsec_bench").update(t + "." + bodyText).digest("hex");
  return new Promise((resolve) => {
    const request = http.request(url, { method: "POST", agent, headers: {
      "content-type": "application/json", "x-bench-baseline": "1",
      "x-flpf-signature": "t=" + t + ",v1=" + signature, "content-length": String(body.length) } },
      (response) => { response.resume(); response.on("end", resolve); });
    request.on("error", resolve);
    request.end(body);
  }).then(one);
}
await Promise.all(Array.from({ length: 256 }, one));
const cpu = process.cpuUsage();
process.stdout.write(JSON.stringify({
  rate: Number(total) / ((performance.now() - started) / 1000),
  cpuMs: (cpu.user + cpu.system) / 1000 / Number(total),
}) + "\\n");
agent.destroy();
`;

async function baseline(): Promise<number> {
  const sample = matches(1)[0] as MatchFound;
  const child = spawn(
    process.execPath,
    [
      "--input-type=module",
      "-e",
      BASELINE,
      receiverUrl,
      String(DELIVERIES),
      JSON.stringify(sample),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  let out = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  await new Promise((resolve) => child.once("exit", resolve));
  const { rate, cpuMs } = JSON.parse(out.trim()) as { rate: number; cpuMs: number };
  report(
    `baseline: ${DELIVERIES} plain signed POSTs, one process`,
    `${rate.toFixed(0)}/s, ${cpuMs.toFixed(3)} ms CPU per POST (start-up included)`,
  );
  return rate;
}

const phases = new Set((process.env.BENCH_PHASES ?? "baseline,one,two,latency").split(","));
report(
  "machine",
  `${(await import("node:os")).cpus().length} cores, load ${(await import("node:os"))
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
const base = phases.has("baseline") ? await baseline() : Number.NaN;
const one = phases.has("one") ? await burst(1) : Number.NaN;
if (phases.has("baseline") && phases.has("one")) {
  report("one instance / baseline", `${(one / base).toFixed(2)}`);
}
if (phases.has("two")) {
  const two = await burst(2);
  report("two instances / one instance", `${(two / one).toFixed(2)}x`);
}
if (phases.has("latency")) {
  await latency(Number(process.env.BENCH_LATENCY_INSTANCES ?? 2));
}
report("signatures verified at the receiver (1 in 50)", `${verified} (${verifyFailures} failed)`);

server.closeAllConnections();
server.close();
await harness.close();
broker.child.kill("SIGTERM");
process.exit(0);
