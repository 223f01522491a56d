// The cost of the authenticated edge: an authenticated GET /v1/me through the full gateway
// (bearer parsing, checksum, the key's stored hash, one Redis script for key + tenant + sliding
// minute, headers) against the same handler on a bare Fastify server, in the same run; each
// server runs in a process of its own, the gateway with its consumers as deployed (logging at
// fatal for both).
// Saturation is measured with autocannon (closed loop), at the number of connections where each
// server peaks, found by a short sweep (see SWEEP below). Latency at half of the
// edge's saturation is measured with bench/paced-load.ts, which sends at a steady rate and counts
// each request's latency from when it was due: autocannon's --overallRate sends each second's
// share back to back and then idles, so its latencies would be those of a saturated server.
// The machine is shared with other work, so the phases run in rounds that alternate their order
// (bare then edge, edge then bare, ...) and the figures reported are each phase's median over the
// rounds: a burst of outside load then lands on one round of both sides, not on one side.
// Each phase also prints the CPU the server process and Redis used per request: at saturation the
// gateway's figure is what bounds the throughput ratio, and it moves less than the ratio does.
// The edge's phases print how many requests a script call carried (Redis's command statistics):
// the paced client sends each millisecond's requests together, so its calls are batches too.
// CPU placement: each server under test runs alone on the machine's last CPU, and the bench's own
// process (the stack and its dev broker), the load clients and Redis run on the others, so the
// load client never takes the server's core and a latency measures the server, not the scheduler.
// Both servers get the same placement. Sharing every CPU, the p99 of either side at the paced rate
// moved with whatever else the two cores ran (single rounds at 10–40 ms while the same server, in
// the same process, read 4 ms pinned); EDGE_BENCH_PIN=0 measures that way. Redis's own placement
// is restored when the bench ends. Without `taskset` or with one CPU, everything shares.
// Run: node bench/edge-auth.ts [seconds per phase] [rounds]
// EDGE_BENCH_NODE_ARGS passes Node flags to both servers, e.g. "--cpu-prof --cpu-prof-dir=prof"
// for a profile of each, or a heap setting to compare; what a server prints (--trace-gc, say)
// goes to stderr under its script's name. EDGE_BENCH_RATE=<req/s> measures latency at that rate
// alone, without the measured saturation phases (a short unmeasured one warms both servers up).

import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import { cpus } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { GATEWAY_NODE_FLAGS } from "@th/gateway/heap";
import { startEdgeStack } from "../test/support/edge-stack.ts";
import { cpuMsOf } from "./support/cpu.ts";

const seconds = Number(process.argv[2] ?? 8);
// Five rounds by default: on a two-core machine about one paced round of the edge in four still
// meets a burst of other work (the machine's own services, a young collection stretched beside
// it), and the median of five rounds stands through two of them; every round is printed.
const rounds = Number(process.argv[3] ?? 5);

interface LoadResult {
  requests: { average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  /** CPU µs per request of the server process, and of Redis, at a steady rate. */
  cpu?: { server: number; redis: number };
  /** Requests per script call Redis ran meanwhile (the edge's batches); absent when none ran. */
  perScriptCall?: number;
}

/** The load runs in its own process so it does not share the servers' event loop. */
async function saturate(
  url: string,
  headers: Record<string, string>,
  connections: number,
  duration = seconds,
): Promise<LoadResult> {
  const args = [
    "--json",
    "--duration",
    String(duration),
    "--connections",
    String(connections),
    ...Object.entries(headers).flatMap(([name, value]) => ["--headers", `${name}=${value}`]),
    url,
  ];
  const bin = join(import.meta.dirname, "node_modules", ".bin", "autocannon");
  const { stdout } = await promisify(execFile)(bin, args, { maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as LoadResult;
}

/** A steady rate from its own process; see bench/paced-load.ts. */
async function paced(
  url: string,
  headers: Record<string, string>,
  rate: number,
): Promise<LoadResult> {
  const script = join(import.meta.dirname, "paced-load.ts");
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [script, url, String(rate), String(seconds), JSON.stringify(headers)],
    { maxBuffer: 1024 * 1024 },
  );
  const result = JSON.parse(stdout) as {
    rate: number;
    p50: number;
    p99: number;
    non2xx: number;
    errors: number;
  };
  return {
    requests: { average: result.rate },
    latency: { p50: result.p50, p99: result.p99 },
    non2xx: result.non2xx + result.errors,
  };
}

/** The CPUs of the servers under test and of everything else, when they can be kept apart. */
function cpuPlacement(): { servers: string; others: string } | undefined {
  const count = cpus().length;
  if (process.env.EDGE_BENCH_PIN === "0" || count < 2) {
    return undefined;
  }
  if (spawnSync("taskset", ["--version"]).status !== 0) {
    console.warn("taskset is not available: every process shares every CPU");
    return undefined;
  }
  return { servers: String(count - 1), others: count === 2 ? "0" : `0-${count - 2}` };
}

/** Moves every thread of a running process to the CPUs listed; false when it could not. */
function pin(pid: number, cpuList: string): boolean {
  return (
    spawnSync("taskset", ["--all-tasks", "--cpu-list", "--pid", cpuList, String(pid)]).status === 0
  );
}

// An interrupted bench exits through its "exit" handlers (Redis's placement, the servers).
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => process.exit(130));
}

const wanted = cpuPlacement();
// The stack, its dev broker and every load client this process starts run on the others' CPUs;
// where this process cannot be moved there, nothing is placed.
const placement = wanted && pin(process.pid, wanted.others) ? wanted : undefined;
if (wanted && !placement) {
  console.warn("this process could not be placed: every process shares every CPU");
}

const stack = await startEdgeStack();
// The rate limit would cut the run short; the bench tenant gets a cap no load here reaches. The
// change goes out as tenant.changed like any other, and the keys service's outbox is drained
// before it stops, so a gateway replaying the topic ends on the newest snapshot.
const tenant = await stack.startTrial("custom");
await stack.setCustomLimits(tenant.tenantId, { rate_per_minute: 100_000_000 });
const keysPool = stack.harness.db.poolFor("keys");
for (let waited = 0; ; waited += 50) {
  const { rows } = await keysPool.query<{ waiting: string }>(
    "SELECT count(*) AS waiting FROM outbox WHERE published_at IS NULL",
  );
  if (Number(rows[0]?.waiting) === 0) {
    break;
  }
  if (waited > 30_000) {
    throw new Error("the keys service's outbox did not drain");
  }
  await new Promise((resolve) => setTimeout(resolve, 50));
}
// The other services share this process only to serve the gateway's cache misses over HTTP; their
// consumers and outbox relays would poll throughout the run and load both sides, so they stop.
await stack.keys.stop();
await stack.ledger.stop();
for (const matcher of stack.matchers()) {
  await matcher.stop();
}
// The gateway under test runs in a process of its own, as deployed (bench/support/gateway-child.ts);
// so does the bare server. The stack's own gateway stops: it was only needed to start the trial.
await stack.gateway.stop();

// Redis answers the edge's script calls; it joins the load clients' CPUs when it runs on this
// machine, and gets its own placement back when the bench exits.
let redisPlaced = false;
if (placement) {
  const redisPid = Number(
    /process_id:(\d+)/.exec(await stack.harness.redis.info("server"))?.[1] ?? Number.NaN,
  );
  const current = spawnSync("taskset", ["--cpu-list", "--pid", String(redisPid)], {
    encoding: "utf8",
  });
  const redisCpus = /: (\S+)\s*$/.exec(current.stdout ?? "")?.[1];
  if (current.status === 0 && redisCpus && pin(redisPid, placement.others)) {
    process.once("exit", () => pin(redisPid, redisCpus));
    redisPlaced = true;
  } else {
    console.warn("Redis could not be placed (not on this machine?): it shares every CPU");
  }
}

const serverNodeArgs = (process.env.EDGE_BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);

/** Starts a server script in its own process and resolves with its URL once it listens. */
function spawnServer(
  script: string,
  env: Record<string, string>,
  nodeFlags: readonly string[] = [],
): Promise<{ child: ChildProcess; url: string }> {
  const command = [
    process.execPath,
    ...nodeFlags,
    ...serverNodeArgs,
    join(import.meta.dirname, "support", script),
  ];
  // taskset replaces itself with the server, so the child's pid is the server's.
  const [file, ...args] = placement
    ? ["taskset", "--cpu-list", placement.servers, ...command]
    : command;
  const child = spawn(file as string, args, {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  // A bench that stops early (an error, an interrupt) does not leave its servers running.
  process.once("exit", () => child.kill());
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`${script} exited with ${code}`)));
    // Anything else the server prints (--trace-gc, say) goes to stderr, named.
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
      const port = /^ready (\d+)$/.exec(line)?.[1];
      if (port) {
        resolve({ child, url: `http://127.0.0.1:${port}/v1/me` });
      } else {
        process.stderr.write(`${script}: ${line}\n`);
      }
    });
  });
}

const gateway = await spawnServer(
  "gateway-child.ts",
  stack.gatewayProcessEnv(),
  // The flags every launch line of the gateway passes (the image, the chart, `npm start`).
  GATEWAY_NODE_FLAGS,
);
const gatewayUrl = gateway.url;
const bare = await spawnServer("bare-fastify-child.ts", {});
const bareUrl = bare.url;

const auth = { authorization: `Bearer ${tenant.key}` };
const check = await fetch(gatewayUrl, { headers: auth });
if (check.status !== 200 || check.headers.get("x-ratelimit-limit") !== "100000000") {
  throw new Error(
    `gateway answered ${check.status} with limit ${check.headers.get("x-ratelimit-limit")}: ${await check.text()}`,
  );
}

/** Redis's own CPU so far (ms), from INFO: the edge's script runs there. */
async function redisCpuMs(): Promise<number> {
  const info = await stack.harness.redis.info("cpu");
  const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? "NaN");
  return (field("used_cpu_user") + field("used_cpu_sys")) * 1000;
}

/** Script calls Redis has run so far: the edge judges the requests of one call together. */
async function redisScriptCalls(): Promise<number> {
  const info = await stack.harness.redis.info("commandstats");
  const calls = (command: string) =>
    Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(info)?.[1] ?? "0");
  return calls("evalsha") + calls("eval");
}

/**
 * A phase with the CPU the server process and Redis used per request during it. At a steady rate
 * this moves far less between runs than saturated throughput, so it shows the cost of a change to
 * the edge where the throughput ratio cannot. At saturation the gateway's own figure is what
 * bounds the ratio (its one thread is the limit there, not the machine), while the bare server's
 * saturation also moves with how the scheduler places it and autocannon.
 */
async function withCpu(
  server: ChildProcess,
  phase: () => Promise<LoadResult>,
): Promise<LoadResult> {
  // Only the gateway's phases count script calls: the other services of the stack share Redis.
  const countsScripts = server === gateway.child;
  const callsBefore = countsScripts ? await redisScriptCalls() : 0;
  const redisBefore = await redisCpuMs();
  const serverBefore = cpuMsOf(server.pid);
  const result = await phase();
  const serverAfter = cpuMsOf(server.pid);
  const redisAfter = await redisCpuMs();
  const calls = countsScripts ? (await redisScriptCalls()) - callsBefore : 0;
  const requests = result.requests.average * seconds;
  return {
    ...result,
    cpu: {
      server: ((serverAfter - serverBefore) * 1000) / requests,
      redis: ((redisAfter - redisBefore) * 1000) / requests,
    },
    ...(calls > 0 ? { perScriptCall: requests / calls } : {}),
  };
}

/** Each round runs both sides; odd rounds run them the other way round. */
async function alternating(
  round: number,
  bareSide: () => Promise<LoadResult>,
  edgeSide: () => Promise<LoadResult>,
): Promise<{ bare: LoadResult; edge: LoadResult }> {
  if (round % 2 === 0) {
    const bareResult = await bareSide();
    return { bare: bareResult, edge: await edgeSide() };
  }
  const edgeResult = await edgeSide();
  return { bare: await bareSide(), edge: edgeResult };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** The median round of a phase, by throughput, and the median p50 and p99 over the rounds. */
function summary(results: LoadResult[]): LoadResult {
  const perScriptCall = results.flatMap((result) =>
    result.perScriptCall === undefined ? [] : [result.perScriptCall],
  );
  return {
    requests: { average: median(results.map((result) => result.requests.average)) },
    latency: {
      p50: median(results.map((result) => result.latency.p50)),
      p99: median(results.map((result) => result.latency.p99)),
    },
    non2xx: results.reduce((sum, result) => sum + result.non2xx, 0),
    ...(results.every((result) => result.cpu)
      ? {
          cpu: {
            server: median(results.map((result) => result.cpu?.server ?? 0)),
            redis: median(results.map((result) => result.cpu?.redis ?? 0)),
          },
        }
      : {}),
    ...(perScriptCall.length === results.length ? { perScriptCall: median(perScriptCall) } : {}),
  };
}

const fixedRate = Number(process.env.EDGE_BENCH_RATE ?? 0);
const saturationRounds = fixedRate > 0 ? 0 : rounds;

// Each server's saturation is its peak over the number of requests in flight. The bare server
// answers at once and peaks with few connections (more only add sockets to poll); the edge waits
// a Redis round trip per request, so by Little's law it needs more requests in flight to keep its
// thread busy, and those arrive together and share script calls. One count for both would measure
// one side below its peak. A short sweep finds each side's count; the rounds then run at it.
const SWEEP = [16, 32, 64, 128, 256];
const SWEEP_SECONDS = 3;
const sweep: { connections: number; bare: number; edge: number }[] = [];
for (const [index, connections] of (saturationRounds > 0 ? SWEEP : []).entries()) {
  const round = await alternating(
    index,
    () => saturate(bareUrl, auth, connections, SWEEP_SECONDS),
    () => saturate(gatewayUrl, auth, connections, SWEEP_SECONDS),
  );
  sweep.push({
    connections,
    bare: round.bare.requests.average,
    edge: round.edge.requests.average,
  });
}
const peakOf = (side: "bare" | "edge") =>
  sweep.reduce(
    (best, level) => (level[side] > best[side] ? level : best),
    sweep[0] ?? { connections: 32, bare: 0, edge: 0 },
  ).connections;
const bareConnections = peakOf("bare");
const edgeConnections = peakOf("edge");

// At a fixed rate there is no saturation phase to warm the servers up, and a fresh process's
// first round measured its heap growing (14–31 ms p99 against 4–9 in the next): a short
// unmeasured saturation of each side stands in for it.
if (fixedRate > 0) {
  await saturate(bareUrl, auth, 32, SWEEP_SECONDS);
  await saturate(gatewayUrl, auth, 32, SWEEP_SECONDS);
}

const saturated: { bare: LoadResult; edge: LoadResult }[] = [];
for (let round = 0; round < saturationRounds; round++) {
  saturated.push(
    await alternating(
      round,
      () => withCpu(bare.child, () => saturate(bareUrl, auth, bareConnections)),
      () => withCpu(gateway.child, () => saturate(gatewayUrl, auth, edgeConnections)),
    ),
  );
}
const bareMax = summary(saturated.map((round) => round.bare));
const edgeMax = summary(saturated.map((round) => round.edge));
const halfRate = fixedRate > 0 ? fixedRate : Math.floor(edgeMax.requests.average / 2);
const atHalf: { bare: LoadResult; edge: LoadResult }[] = [];
for (let round = 0; round < rounds; round++) {
  atHalf.push(
    await alternating(
      round,
      () => withCpu(bare.child, () => paced(bareUrl, auth, halfRate)),
      () => withCpu(gateway.child, () => paced(gatewayUrl, auth, halfRate)),
    ),
  );
}
const bareHalf = summary(atHalf.map((round) => round.bare));
const edgeHalf = summary(atHalf.map((round) => round.edge));

const rows = [
  ...(fixedRate > 0
    ? []
    : ([
        [`bare Fastify, saturated (${bareConnections} conn.)`, bareMax],
        [`full edge, saturated (${edgeConnections} conn.)`, edgeMax],
      ] as const)),
  [`bare Fastify at ${halfRate} req/s`, bareHalf],
  [`full edge at ${halfRate} req/s`, edgeHalf],
] as const;
console.info(
  `machine: ${cpus().length} x ${cpus()[0]?.model}, Node ${process.version}, ${seconds} s per phase, median of ${rounds} alternating rounds`,
);
console.info(
  placement
    ? `CPU placement: each server under test on CPU ${placement.servers}; the load client${redisPlaced ? ", Redis" : ""} and the stack on CPU ${placement.others}`
    : "CPU placement: every process shares every CPU",
);
if (sweep.length > 0) {
  console.info(
    `saturation by connections (${SWEEP_SECONDS} s each, req/s bare / edge): ${sweep
      .map((level) => `${level.connections}: ${level.bare.toFixed(0)} / ${level.edge.toFixed(0)}`)
      .join(", ")}`,
  );
}
for (const [name, result] of rows) {
  const cpu = result.cpu
    ? `  CPU/request: server ${result.cpu.server.toFixed(1)} µs, Redis ${result.cpu.redis.toFixed(1)} µs`
    : "";
  const batches = result.perScriptCall
    ? `, ${result.perScriptCall.toFixed(1)} requests per script call`
    : "";
  console.info(
    `${name.padEnd(36)} ${result.requests.average.toFixed(0).padStart(7)} req/s  p50 ${result.latency.p50} ms  p99 ${result.latency.p99} ms  non-2xx ${result.non2xx}${cpu}${batches}`,
  );
}
if (fixedRate > 0) {
  console.info(
    `edge p99 at ${fixedRate} req/s by round: ${atHalf.map((round) => `${round.edge.latency.p99} ms`).join(", ")} ` +
      `(bare: ${atHalf.map((round) => `${round.bare.latency.p99} ms`).join(", ")})`,
  );
} else {
  const roundRatios = saturated.map(
    (round) => round.edge.requests.average / round.bare.requests.average,
  );
  console.info(
    `edge / bare throughput by round: ${roundRatios.map((ratio) => `${ratio.toFixed(2)}x`).join(", ")}; ` +
      `edge p99 at half of its saturation by round: ${atHalf.map((round) => `${round.edge.latency.p99} ms`).join(", ")} ` +
      // The bare server's p99 in the same round shows how much of a bad round was the machine's.
      `(bare at the same rate: ${atHalf.map((round) => `${round.bare.latency.p99} ms`).join(", ")})`,
  );
  // Three decimals and a verdict: 0.4994 would print as a passing "0.50x".
  const ratio = edgeMax.requests.average / bareMax.requests.average;
  const verdict = (met: boolean) => (met ? "met" : "NOT met");
  console.info(
    `edge / bare throughput: ${ratio.toFixed(3)}x (goal >= 0.5x: ${verdict(ratio >= 0.5)}); ` +
      `edge p99 at half of its saturation: ${edgeHalf.latency.p99} ms (goal < 5 ms: ${verdict(edgeHalf.latency.p99 < 5)})`,
  );
}

for (const server of [bare, gateway]) {
  server.child.removeAllListeners("exit");
  const exited = new Promise((resolve) => server.child.once("exit", resolve));
  server.child.kill("SIGTERM");
  await exited;
}
await stack.close();
