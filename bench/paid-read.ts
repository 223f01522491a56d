// The request the business runs on: a metered lead read through the whole gateway (key, rate limit,
// lead-view reservation, parcel lookup, leadview.recorded), against a bare Fastify server that
// returns the same lead JSON from memory, in the same run. Many tenants and folios, so new views
// and repeat views of the UTC day both occur.
// The parcels service runs in a process of its own, as in production.
// Phases: closed-loop saturation of single reads (GET /v1/leads/{folio}) on both servers in rounds
// of alternating order (the median is reported); latency at half of the gateway's saturation
// (bench/paced-load.ts, both servers at that rate), and again at a tenth of it, where the cores are
// mostly idle and what remains is the path's own latency; and batches of 100 (POST /v1/leads/batch) with
// the figure per lead beside them. Each phase prints the CPU per request of every process.
// Run: node bench/paid-read.ts [seconds per phase] [rounds] [--statements] [--redis-commands]
// [--windows]
// [--phases=singles,latency,batches]
// --statements prints, for each saturated phase, the SQL statements the stack's database ran per
// request (pg_stat_statements, which the server must preload); --redis-commands prints the Redis
// commands per request and the server time each took (INFO commandstats); --phases runs only those named
// (to profile one of them, say; latency needs singles); --windows prints each saturated phase's
// span on the clock CPU profiles use. BENCH_NODE_ARGS passes Node flags to the gateway
// ("--cpu-prof --cpu-prof-dir=prof", say); NODE_OPTIONS reaches every process.
import type { ChildProcess } from "node:child_process";
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { GATEWAY_NODE_FLAGS } from "@th/gateway/heap";
import { cpuMsOf, postgresCpuMsOf, postgresCpuMsSince } from "./support/cpu.ts";
import { openLoopLateness } from "./support/loop-lateness.ts";
import { startPaidReadStack } from "./support/paid-read-stack.ts";
import { spawnUntilReady, stopChild } from "./support/processes.ts";
import { commandLines, openRedisCommands } from "./support/redis-commands.ts";
import { openStatements, statementLines } from "./support/statements.ts";

const flags = process.argv.slice(2).filter((arg) => arg.startsWith("--"));
const positional = process.argv.slice(2).filter((arg) => !arg.startsWith("--"));
const seconds = Number(positional[0] ?? 8);
const rounds = Number(positional[1] ?? 3);
const phases = new Set(
  (flags.find((flag) => flag.startsWith("--phases="))?.slice(9) ?? "singles,latency,batches").split(
    ",",
  ),
);
const CONNECTIONS = 64;
const TARGET_RATIO = 0.35;
const TARGET_P99_MS = 10;
const run = promisify(execFile);

function report(label: string, value: string): void {
  process.stdout.write(`${label.padEnd(60)} ${value}\n`);
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

interface Server {
  name: string;
  child: ChildProcess;
  url: string;
}

/**
 * The last "loop <p99> <max>" line each server printed (the gateway prints one on SIGUSR2): how
 * late its event loop ran, in ms.
 */
const loopLines = new Map<string, string>();
/** The last "gc <young> <other> <total ms> <longest ms>" line, printed with it. */
const gcLines = new Map<string, string>();
/** The last "inside <p50> <p99>" line: a request's time from its arrival to its answer, in ms. */
const insideLines = new Map<string, string>();

async function serve(name: string, args: string[], env: Record<string, string>): Promise<Server> {
  const started = await spawnUntilReady(args, env, /^ready \d+$/, (line) => {
    if (line.startsWith("loop ")) {
      loopLines.set(name, line);
    } else if (line.startsWith("gc ")) {
      gcLines.set(name, line);
    } else if (line.startsWith("inside ")) {
      insideLines.set(name, line);
    }
  });
  process.once("exit", () => started.child.kill());
  return { name, child: started.child, url: `http://127.0.0.1:${started.line.split(" ")[1]}` };
}

// 20 tenants read; a 21st warms the gateway's read model of lead documents first.
const setup = await startPaidReadStack({ tenants: 21, rows: 5_000, parcelsProcess: true });
const { folios } = setup;
const keys = setup.keys.slice(0, 20);
const warmKey = setup.keys[20] as string;
const { database } = setup;
const statements = flags.includes("--statements")
  ? await openStatements(setup.stack.harness.db.poolFor("parcels"), database)
  : null;
if (flags.includes("--statements") && !statements) {
  process.stdout.write("pg_stat_statements is not preloaded by this server: no statements\n");
}
const redisCommands = flags.includes("--redis-commands")
  ? await openRedisCommands(setup.redisUrl)
  : null;
const gateway = await serve(
  "gateway",
  [
    ...GATEWAY_NODE_FLAGS,
    ...(process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean),
    join(import.meta.dirname, "support", "gateway-child.ts"),
  ],
  setup.gatewayEnv,
);
// The bare server answers with the bodies the gateway gives for the same requests.
const auth = { authorization: `Bearer ${keys[0]}` };
const lead = await fetch(`${gateway.url}/v1/leads/${folios[0]}`, { headers: auth });
const batch = await fetch(`${gateway.url}/v1/leads/batch`, {
  method: "POST",
  headers: { ...auth, "content-type": "application/json" },
  body: JSON.stringify({ folios: folios.slice(0, 100) }),
});
if (lead.status !== 200 || batch.status !== 200) {
  throw new Error(`the gateway answered ${lead.status} and ${batch.status}`);
}
await warmReadModel();
const dir = await mkdtemp(join(tmpdir(), "th-paid-read-"));
await writeFile(join(dir, "lead.json"), await lead.text());
await writeFile(join(dir, "batch.json"), await batch.text());
const bare = await serve("bare", [join(import.meta.dirname, "support", "bare-lead-child.ts")], {
  BARE_LEAD_FILE: join(dir, "lead.json"),
  BARE_BATCH_FILE: join(dir, "batch.json"),
});

/**
 * The gateway holds the lead documents read lately (decision 0390), as a busy deployment's
 * gateways hold its busy folios: every folio is read once, by a tenant the phases do not use,
 * once the gateway follows parcel.ingested. `LEAD_DOCUMENTS_MB=0` in the environment measures
 * the path without it.
 */
async function warmReadModel(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  for (let at = 0; at < folios.length; at += 100) {
    const warm = await fetch(`${gateway.url}/v1/leads/batch`, {
      method: "POST",
      headers: { authorization: `Bearer ${warmKey}`, "content-type": "application/json" },
      body: JSON.stringify({ folios: folios.slice(at, at + 100) }),
    });
    if (warm.status !== 200) {
      throw new Error(`warming the read model: the gateway answered ${warm.status}`);
    }
  }
}

interface Load {
  statuses: Record<string, number>;
  samples: Record<string, string>;
  completed: number;
  seconds: number;
  non2xx: number;
  p99: number;
  cpuMs: number;
}

/**
 * CPU ms so far of the server, the parcels service, the stack's own Redis, Postgres's backends of
 * this database, the broker, and this process (the keys and ledger services).
 */
function cpuNow(server: Server) {
  const self = process.cpuUsage();
  return {
    server: cpuMsOf(server.child.pid),
    parcels: cpuMsOf(setup.parcelsPid),
    broker: cpuMsOf(setup.brokerPid),
    redis: cpuMsOf(setup.redisPid),
    postgres: postgresCpuMsOf(database),
    self: (self.user + self.system) / 1000,
  };
}

function cpuPerRequest(server: Server, before: ReturnType<typeof cpuNow>, requests: number) {
  const after = cpuNow(server);
  const us = (ms: number) => `${((ms * 1000) / requests).toFixed(0)} µs`;
  return [
    `${server.name} ${us(after.server - before.server)}`,
    `parcels ${us(after.parcels - before.parcels)}`,
    `redis ${us(after.redis - before.redis)}`,
    `postgres ${us(postgresCpuMsSince(database, before.postgres))}`,
    `broker ${us(after.broker - before.broker)}`,
    `stack (keys, ledger) ${us(after.self - before.self)}`,
  ].join(", ");
}

async function saturate(
  server: Server,
  batchSize: number,
): Promise<{ rate: number; cpu: string; statements: string[] }> {
  await statements?.reset();
  await redisCommands?.reset();
  const before = cpuNow(server);
  const plan = join(dir, "plan.json");
  await writeFile(
    plan,
    JSON.stringify({
      urls: [server.url],
      keys,
      folios,
      seconds,
      connections: CONNECTIONS,
      batch: batchSize,
    }),
  );
  const { stdout } = await run(process.execPath, [
    join(import.meta.dirname, "support", "read-load.ts"),
    plan,
  ]);
  const load = JSON.parse(stdout) as Load;
  if (load.non2xx > 0) {
    throw new Error(
      `${server.name} answered with errors: ${JSON.stringify(load.statuses)} ${JSON.stringify(load.samples)}`,
    );
  }
  const cpu = cpuPerRequest(server, before, load.completed);
  return {
    rate: load.completed / load.seconds,
    cpu,
    statements: [
      ...(statements ? statementLines(await statements.read(), load.completed) : []),
      ...(redisCommands ? commandLines(await redisCommands.read(), load.completed) : []),
    ],
  };
}

function gcText(line: string | undefined): string {
  const [young, other, totalMs, longestMs] = (line ?? "").split(" ").slice(1);
  return line
    ? `${young} young, ${other} other; ${totalMs} ms in all, the longest ${longestMs} ms`
    : "n/a";
}

async function paced(
  server: Server,
  rate: number,
): Promise<{
  p50: number;
  p99: number;
  p999: number;
  non2xx: number;
  stackLoopP99: number;
  serverLoop: string;
  serverGc: string;
  serverInside: string;
}> {
  // The ledger consumes leadview.recorded on this process's event loop.
  const loop = openLoopLateness();
  // Only the gateway answers SIGUSR2 (with its event-loop delay); it would end the bare server.
  const ownLoop = server.name === "gateway";
  if (ownLoop) {
    server.child.kill("SIGUSR2");
  }
  const variants = join(dir, "variants.json");
  await writeFile(
    variants,
    JSON.stringify(
      Array.from({ length: 4_000 }, (_, i) => ({
        path: `/v1/leads/${folios[(i * 7919) % folios.length]}`,
        headers: { authorization: `Bearer ${keys[i % keys.length]}` },
      })),
    ),
  );
  const { stdout } = await run(
    process.execPath,
    [
      join(import.meta.dirname, "paced-load.ts"),
      `${server.url}/v1/leads/x`,
      String(rate),
      String(seconds),
      "{}",
      variants,
    ],
    { maxBuffer: 1024 * 1024 },
  );
  loop.stop();
  loopLines.delete(server.name);
  if (ownLoop) {
    server.child.kill("SIGUSR2");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const result = JSON.parse(stdout) as {
    p50: number;
    p99: number;
    p999: number;
    non2xx: number;
    errors: number;
  };
  return {
    p50: result.p50,
    p99: result.p99,
    p999: result.p999,
    non2xx: result.non2xx + result.errors,
    stackLoopP99: loop.p99(),
    serverLoop: loopLines.get(server.name)?.split(" ").slice(1).join(" ms, max ") ?? "n/a",
    serverGc: gcText(gcLines.get(server.name)),
    serverInside:
      insideLines.get(server.name)?.split(" ").slice(1).join(" / ").concat(" ms") ?? "n/a",
  };
}

report(
  "machine",
  `${cpus().length} × ${cpus()[0]?.model ?? "?"}, load average ${loadavg()[0]?.toFixed(1)}`,
);
report("tenants / folios", `${keys.length} / ${folios.length}`);
/** The statements a phase ran, one line each, when `--statements` asked for them. */
function reportStatements(lines: readonly string[], unit: string): void {
  for (const line of lines) {
    process.stdout.write(`    per ${unit}: ${line}\n`);
  }
}

/**
 * With `--windows`, the phase's span on the monotonic clock in µs, which CPU profiles
 * (`--cpu-prof`) stamp their samples with: a profile of the whole run is cut to one phase by it.
 */
async function inWindow<T>(label: string, phase: () => Promise<T>): Promise<T> {
  const from = process.hrtime.bigint() / 1000n;
  const result = await phase();
  if (flags.includes("--windows")) {
    report(`  window of ${label} (µs, monotonic)`, `${from} ${process.hrtime.bigint() / 1000n}`);
  }
  return result;
}

const edgeRates: number[] = [];
const bareRates: number[] = [];
for (let round = 0; phases.has("singles") && round < rounds; round++) {
  const order = round % 2 === 0 ? [gateway, bare] : [bare, gateway];
  for (const server of order) {
    const result = await inWindow(`${server.name} singles`, () => saturate(server, 0));
    (server === gateway ? edgeRates : bareRates).push(result.rate);
    report(
      `round ${round + 1}: ${server.name}, single reads saturated`,
      `${result.rate.toFixed(0)} req/s; CPU per request: ${result.cpu}`,
    );
    reportStatements(result.statements, "read");
  }
}
if (phases.has("singles")) {
  const edge = median(edgeRates);
  const ratio = edge / median(bareRates);
  report(
    "single reads: gateway / bare (medians)",
    `${ratio.toFixed(3)}x (target ≥ ${TARGET_RATIO}: ${ratio >= TARGET_RATIO ? "met" : "NOT met"})`,
  );
  if (phases.has("latency")) {
    await measureLatency(edge);
  }
}

async function measureLatency(edge: number): Promise<void> {
  const half = Math.round(edge / 2);
  const edgeLatency = await paced(gateway, half);
  const bareLatency = await paced(bare, half);
  report(
    `p99 at half of the gateway's saturation (${half} req/s)`,
    `gateway ${edgeLatency.p99} ms, bare ${bareLatency.p99} ms (target < ${TARGET_P99_MS} ms: ${edgeLatency.p99 < TARGET_P99_MS && edgeLatency.non2xx === 0 ? "met" : "NOT met"})`,
  );
  report("  p50 / p99.9 of the gateway", `${edgeLatency.p50} / ${edgeLatency.p999} ms`);
  report(
    "  event-loop lateness p99 of the stack (keys, ledger)",
    `${edgeLatency.stackLoopP99.toFixed(1)} ms while the gateway was paced`,
  );
  report("  p50 / p99 inside the gateway (arrival to answer)", edgeLatency.serverInside);
  report("  event-loop lateness p99 of the gateway", `${edgeLatency.serverLoop} ms`);
  report("  collections in the gateway meanwhile", edgeLatency.serverGc);
  // At a tenth of saturation the cores are mostly idle: what remains is the path's own latency
  // (its hops, timers and batch windows), apart from waiting for a busy core.
  const tenth = Math.round(edge / 10);
  const quietEdge = await paced(gateway, tenth);
  const quietBare = await paced(bare, tenth);
  report(
    `p99 at a tenth of the gateway's saturation (${tenth} req/s)`,
    `gateway ${quietEdge.p99} ms, bare ${quietBare.p99} ms; event-loop lateness p99 of the stack ${quietEdge.stackLoopP99.toFixed(1)} ms`,
  );
  report("  p50 / p99.9 of the gateway", `${quietEdge.p50} / ${quietEdge.p999} ms`);
  report("  p50 / p99 inside the gateway (arrival to answer)", quietEdge.serverInside);
  report("  event-loop lateness p99 of the gateway", `${quietEdge.serverLoop} ms`);
  report("  collections in the gateway meanwhile", quietEdge.serverGc);
}

for (const server of phases.has("batches") ? [gateway, bare] : []) {
  const result = await inWindow(`${server.name} batches`, () => saturate(server, 100));
  report(
    `${server.name}: batches of 100 saturated`,
    `${result.rate.toFixed(0)} batches/s = ${(result.rate * 100).toFixed(0)} leads/s; CPU per batch: ${result.cpu}`,
  );
  reportStatements(result.statements, "batch");
}

await redisCommands?.close();
await Promise.all([stopChild(gateway.child), stopChild(bare.child)]);
await rm(dir, { recursive: true, force: true });
await setup.close();
process.exit(0);
