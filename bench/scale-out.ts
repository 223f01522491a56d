// Scale-out on a small machine: N instances of one service, each in a cgroup of its own with a
// fixed CPU quota, driven with the same work, so throughput that grows with N is scale-out and not
// a bigger share of the machine. Prints throughput, the scaling efficiency
// throughput(N) / (N x throughput(1)), and the CPU of every process taking part. A canary with
// fixed work, in a cgroup of its own at the instances' quota, shows how fast the machine itself
// ran in each round. Every instance gets the same warm-up before it is judged, and each count is
// measured over several rounds (`--rounds`, 3); the figure is their median.
//
//   node bench/scale-out.ts --service dispatcher|matcher|gateway [--instances 1,2,4]
//                           [--cpu-quota 0.15] [--work N] [--tenants N (dispatcher)]
//                           [--one-busy (matcher, dispatcher)] [--cpu-period-ms 100] [--rounds 3]
//
// Needs root (cgroup v1 cpu controller or cgroup v2 cpu.max), Postgres and Redis. Exits non-zero
// when a quota cannot be set: it never prints an unquota'd figure. Instances and the shared
// processes (broker, database backends, this process) run at the highest CPU weight, so a
// neighbour on a shared machine slows neither the instances below their quota nor what they wait on.
import type { ChildProcess } from "node:child_process";
import { cpus, loadavg } from "node:os";
import { parseArgs } from "node:util";
import { type Canary, startCanary } from "./support/canary.ts";
import {
  type CpuQuota,
  createCpuPriority,
  createCpuQuota,
  DEFAULT_PERIOD_MS,
} from "./support/cgroup.ts";
import {
  cpuMsOf,
  machineCpuMs,
  postgresCpuMsOf,
  postgresCpuMsSince,
  syscallsOf,
  userCpuMsOf,
} from "./support/cpu.ts";
import { percentile, sleep, stopChild } from "./support/processes.ts";
import type { ScaleDriver, ScaleOptions, ScaleRound } from "./support/scale-driver.ts";

const TARGETS: Record<number, number> = { 2: 0.9, 4: 0.85 };
const IDLE_MS = 3_000;
/** Measured rounds per count: the median of three shrugs off one round a neighbour slowed. */
const DEFAULT_ROUNDS = 3;
/** The machine's busy share above which a round is no longer bound by the instances' quota. */
const MACHINE_FULL = 0.8;

function report(label: string, value: string): void {
  process.stdout.write(`${label.padEnd(56)} ${value}\n`);
}

function cpuPerSecond(ms: number, seconds: number): string {
  return `${(ms / 1000 / seconds).toFixed(2)} cores`;
}

interface CpuReading {
  instances: number[];
  shared: Map<string, number>;
  postgres: Map<number, number>;
  self: number;
}

function readCpu(driver: ScaleDriver, instances: readonly ChildProcess[]): CpuReading {
  const shared = new Map<string, number>();
  for (const [name, pids] of Object.entries(driver.shared())) {
    shared.set(
      name,
      pids.reduce((sum, pid) => sum + cpuMsOf(pid), 0),
    );
  }
  const self = process.cpuUsage();
  return {
    instances: instances.map((child) => cpuMsOf(child.pid)),
    shared,
    postgres: postgresCpuMsOf(driver.database),
    self: (self.user + self.system) / 1000,
  };
}

function reportCpu(
  driver: ScaleDriver,
  instances: readonly ChildProcess[],
  before: CpuReading,
  seconds: number,
  quotas: readonly CpuQuota[],
): void {
  const after = readCpu(driver, instances);
  const each = after.instances.map((ms, i) => ms - (before.instances[i] ?? 0));
  const throttled = quotas.map((quota) => quota.throttling());
  report(
    "  CPU of each instance over the round (throttled periods)",
    each
      .map((ms, i) => `${cpuPerSecond(ms, seconds)} (throttled ${throttled[i]?.throttled ?? 0})`)
      .join(", "),
  );
  const parts = [...after.shared].map(
    ([name, ms]) => `${name} ${cpuPerSecond(ms - (before.shared.get(name) ?? 0), seconds)}`,
  );
  parts.push(
    `postgres ${cpuPerSecond(postgresCpuMsSince(driver.database, before.postgres), seconds)}`,
  );
  parts.push(`this process ${cpuPerSecond(after.self - before.self, seconds)}`);
  report("  CPU of the shared processes (this process: stack, load)", parts.join(", "));
}

/** Starts `count` instances, each moved into a cgroup of its own with the quota. */
async function startInstances(
  driver: ScaleDriver,
  count: number,
  cores: number,
  periodMs: number,
): Promise<{ instances: ChildProcess[]; quotas: CpuQuota[] }> {
  const instances: ChildProcess[] = [];
  const quotas: CpuQuota[] = [];
  for (let i = 0; i < count; i++) {
    const child = await driver.startInstance(i);
    const quota = createCpuQuota(`th-scale-out-${process.pid}-${count}-${i}`, cores, periodMs);
    quota.add(child.pid as number);
    instances.push(child);
    quotas.push(quota);
  }
  await driver.settle(instances);
  return { instances, quotas };
}

/** Moves the shared processes, and the database backends open now, into the priority group. */
function prioritiseShared(driver: ScaleDriver, group: { add(pid: number): void }): void {
  const pids = [
    process.pid,
    ...Object.values(driver.shared()).flat(),
    ...postgresCpuMsOf(driver.database).keys(),
  ];
  for (const pid of pids) {
    try {
      group.add(pid);
    } catch {
      // A backend that closed meanwhile.
    }
  }
}

export async function runScaleOut(driver: ScaleDriver, options: ScaleOptions): Promise<boolean> {
  const shared = createCpuPriority(`th-scale-out-shared-${process.pid}`);
  const canary = await startCanary(
    `th-scale-out-canary-${process.pid}`,
    options.cpuQuota,
    options.cpuPeriodMs ?? DEFAULT_PERIOD_MS,
  );
  try {
    return await runCounts(driver, options, shared, canary);
  } finally {
    await canary.stop();
    shared.remove();
  }
}

/** What the measured rounds of one instance count used and did, all rounds together. */
interface Measured {
  /** Each round's units per second, in the order they ran. */
  rates: number[];
  completed: number;
  seconds: number;
  before: CpuReading;
  userMs: number;
  allMs: number;
  calls: { reads: number; writes: number; wakeups: number };
  machineBusy: number;
  canaryUs: number;
  /** Each round's service-specific findings. */
  notes: Array<Array<[string, string]>>;
}

const sum = (values: readonly number[]) => values.reduce((total, one) => total + one, 0);

function callsOf(instances: readonly ChildProcess[]) {
  const each = instances.map((child) => syscallsOf(child.pid));
  return {
    reads: sum(each.map((one) => one.reads)),
    writes: sum(each.map((one) => one.writes)),
    wakeups: sum(each.map((one) => one.wakeups)),
  };
}

/** How many unmeasured rounds give each of `count` instances the same warm-up. */
function warmUpRounds(
  driver: Pick<ScaleDriver, "timedRounds">,
  options: Pick<ScaleOptions, "instances" | "oneBusy">,
  count: number,
): number {
  if (driver.timedRounds) {
    return Math.max(...options.instances);
  }
  return options.oneBusy ? 1 : count;
}

/** Runs `rounds` unmeasured rounds; answers the last one's rate. */
async function warmUp(
  driver: ScaleDriver,
  instances: readonly ChildProcess[],
  rounds: number,
): Promise<number> {
  let warm = await driver.round(instances);
  for (let extra = 1; extra < rounds; extra++) {
    warm = await driver.round(instances);
  }
  return warm.completed / warm.seconds;
}

/** Runs `rounds` measured rounds back to back and reads every counter around them. */
async function measure(
  driver: ScaleDriver,
  instances: readonly ChildProcess[],
  canary: Canary,
  rounds: number,
): Promise<Measured> {
  const before = readCpu(driver, instances);
  const userBefore = sum(instances.map((child) => userCpuMsOf(child.pid)));
  const callsBefore = callsOf(instances);
  const machineBefore = machineCpuMs();
  const canaryMark = canary.mark();
  const started = performance.now();
  const results: ScaleRound[] = [];
  for (let round = 0; round < rounds; round++) {
    results.push(await driver.round(instances));
  }
  const seconds = (performance.now() - started) / 1000;
  const canaryUs = canary.since(canaryMark);
  const machineAfter = machineCpuMs();
  const callsAfter = callsOf(instances);
  return {
    rates: results.map((round) => round.completed / round.seconds),
    completed: sum(results.map((round) => round.completed)),
    seconds,
    before,
    userMs: sum(instances.map((child) => userCpuMsOf(child.pid))) - userBefore,
    allMs: sum(instances.map((child, i) => cpuMsOf(child.pid) - (before.instances[i] ?? 0))),
    calls: {
      reads: callsAfter.reads - callsBefore.reads,
      writes: callsAfter.writes - callsBefore.writes,
      wakeups: callsAfter.wakeups - callsBefore.wakeups,
    },
    machineBusy:
      (machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total),
    canaryUs,
    notes: results.map((round) => round.notes),
  };
}

/** The per-unit costs of the measured rounds and the machine's state while they ran. */
function reportCosts(driver: ScaleDriver, measured: Measured, canaryAtOne: number): void {
  // User CPU alone is the code's own work per unit; the rest is the kernel's (sockets).
  const perThousand = (ms: number) => ((ms * 1000) / measured.completed).toFixed(0);
  report(
    `  CPU of the instances per 1,000 ${driver.unit}: user, all`,
    `${perThousand(measured.userMs)} ms, ${perThousand(measured.allMs)} ms`,
  );
  const perUnit = (count: number) => (count / measured.completed).toFixed(2);
  const { reads, writes, wakeups } = measured.calls;
  report(
    "  instances' syscalls per unit: reads, writes, wakeups",
    `${perUnit(reads)}, ${perUnit(writes)}, ${perUnit(wakeups)}`,
  );
  // The same fixed work costing more during these rounds than during one instance's means the
  // machine ran slower for everyone, not that the service did more.
  report(
    "  machine canary, µs of CPU per unit, these rounds",
    `${measured.canaryUs.toFixed(1)} (${(measured.canaryUs / canaryAtOne).toFixed(2)}x of one instance's rounds)`,
  );
  // The quota binds only while the shared processes have CPU to spare: near a full machine an
  // instance waits longer on Postgres and the broker, wakes more often for less work each time,
  // and its CPU per unit rises though the canary's pure computation does not.
  const cores = cpus().length;
  report(
    "  machine busy over the rounds, every process",
    `${(measured.machineBusy * cores).toFixed(2)} of ${cores} cores${measured.machineBusy > MACHINE_FULL ? " (near full: the shared processes, not the quota, bound these rounds)" : ""}`,
  );
  // Each finding once, with every round's value: a loss in any round shows.
  const labels = measured.notes[0]?.map(([label]) => label) ?? [];
  for (const [index, label] of labels.entries()) {
    report(`  ${label}`, measured.notes.map((notes) => notes[index]?.[1] ?? "?").join(" | "));
  }
}

/** The efficiency line of one count; answers whether its target (if any) was met. */
function reportRate(
  driver: ScaleDriver,
  options: ScaleOptions,
  count: number,
  rate: number,
  measured: Measured,
  one: number | undefined,
): boolean {
  // With one busy instance, the figure is its rate against one instance alone.
  const efficiency = one === undefined ? Number.NaN : rate / ((options.oneBusy ? 1 : count) * one);
  const target = options.oneBusy ? undefined : TARGETS[count];
  const met = target === undefined || efficiency >= target;
  const verdict =
    target === undefined || Number.isNaN(efficiency)
      ? ""
      : ` (target ≥ ${target}: ${met ? "met" : "NOT met"})`;
  const rounds = measured.rates.map((each) => each.toFixed(0)).join(", ");
  report(
    `${count} instance(s)`,
    `${rate.toFixed(0)} ${driver.unit}/s, median of ${measured.rates.length} rounds (${rounds}); ${options.oneBusy ? "against one instance alone" : "efficiency"} ${efficiency.toFixed(2)}${verdict}`,
  );
  return met;
}

/** Starts `count` instances, warms them, measures them and prints the figures; then stops them. */
async function runCount(
  driver: ScaleDriver,
  options: ScaleOptions,
  count: number,
  shared: { add(pid: number): void },
  canary: Canary,
  baseline: { rate?: number; canaryUs?: number },
): Promise<boolean> {
  const periodMs = options.cpuPeriodMs ?? DEFAULT_PERIOD_MS;
  const { instances, quotas } = await startInstances(driver, count, options.cpuQuota, periodMs);
  prioritiseShared(driver, shared);
  try {
    // Instances in production run warm: each is judged after the same warm-up, having compiled
    // its hot paths and grown its heap. Rounds of fixed work are split between the instances, so
    // a count gets as many as it has instances (one round each left four instances with a
    // quarter of the warm-up, still compiling and faulting in heap pages). Timed rounds give
    // every instance the same time, as many as the largest count has instances.
    const warmRate = await warmUp(driver, instances, warmUpRounds(driver, options, count));
    // Backends the instances' pools opened during the warm-up.
    prioritiseShared(driver, shared);
    // What an instance spends with no work (polls, consumer fetches, heartbeats): a cost every
    // added instance pays, which the efficiency includes.
    const idle = readCpu(driver, instances);
    await sleep(IDLE_MS);
    const idleAfter = readCpu(driver, instances);
    const measured = await measure(driver, instances, canary, options.rounds ?? DEFAULT_ROUNDS);
    const rate = percentile(measured.rates, 50);
    if (count === 1) {
      baseline.rate = rate;
      baseline.canaryUs = measured.canaryUs;
    }
    const met = reportRate(driver, options, count, rate, measured, baseline.rate);
    report("  last warm-up round, not counted", `${warmRate.toFixed(0)} ${driver.unit}/s`);
    report(
      "  CPU of each instance while idle, before the rounds",
      idleAfter.instances
        .map((ms, i) => cpuPerSecond(ms - (idle.instances[i] ?? 0), IDLE_MS / 1000))
        .join(", "),
    );
    reportCpu(driver, instances, measured.before, measured.seconds, quotas);
    reportCosts(driver, measured, baseline.canaryUs ?? Number.NaN);
    return met;
  } finally {
    await Promise.all(instances.map((child) => stopChild(child)));
    for (const quota of quotas) {
      quota.remove();
    }
  }
}

async function runCounts(
  driver: ScaleDriver,
  options: ScaleOptions,
  shared: { add(pid: number): void },
  canary: Canary,
): Promise<boolean> {
  report(
    "machine",
    `${cpus().length} × ${cpus()[0]?.model ?? "?"}, load ${loadavg()[0]?.toFixed(1)}`,
  );
  report(
    "CPU quota per instance",
    `${options.cpuQuota} of a core in every ${options.cpuPeriodMs ?? DEFAULT_PERIOD_MS} ms`,
  );
  const baseline: { rate?: number; canaryUs?: number } = {};
  let met = true;
  for (const count of options.instances) {
    met = (await runCount(driver, options, count, shared, canary, baseline)) && met;
    await sleep(500);
  }
  return met;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      service: { type: "string" },
      instances: { type: "string", default: "1,2,4" },
      "cpu-quota": { type: "string", default: "0.15" },
      work: { type: "string" },
      tenants: { type: "string" },
      "one-busy": { type: "boolean", default: false },
      "cpu-period-ms": { type: "string", default: String(DEFAULT_PERIOD_MS) },
      rounds: { type: "string", default: String(DEFAULT_ROUNDS) },
    },
  });
  const options: ScaleOptions = {
    instances: (values.instances ?? "").split(",").map(Number),
    cpuQuota: Number(values["cpu-quota"]),
    work: values.work === undefined ? undefined : Number(values.work),
    tenants: values.tenants === undefined ? undefined : Number(values.tenants),
    oneBusy: values["one-busy"] ?? false,
    cpuPeriodMs: Number(values["cpu-period-ms"]),
    rounds: Number(values.rounds),
  };
  if (!options.instances.includes(1) || options.instances[0] !== 1) {
    throw new Error("--instances must start with 1: efficiency is measured against one instance");
  }
  try {
    createCpuQuota(`th-scale-out-probe-${process.pid}`, options.cpuQuota).remove();
  } catch (error) {
    process.stderr.write(`scale-out: ${(error as Error).message}; no figure without a quota\n`);
    process.exit(2);
  }
  const drivers: Record<string, () => Promise<ScaleDriver>> = {
    dispatcher: async () =>
      (await import("./support/scale-dispatcher.ts")).dispatcherDriver(options),
    matcher: async () => (await import("./support/scale-matcher.ts")).matcherDriver(options),
    gateway: async () => (await import("./support/scale-gateway.ts")).gatewayDriver(options),
  };
  if (options.oneBusy && values.service === "gateway") {
    throw new Error("--one-busy is the matcher's and the dispatcher's control");
  }
  const make = drivers[values.service ?? ""];
  if (!make) {
    throw new Error(`--service must be one of ${Object.keys(drivers).join(", ")}`);
  }
  const driver = await make();
  let met = false;
  try {
    met = await runScaleOut(driver, options);
  } finally {
    await driver.close();
  }
  report(
    "targets (efficiency ≥ 0.9 at 2, ≥ 0.85 at 4)",
    options.oneBusy ? "not judged: --one-busy is a control" : met ? "met" : "NOT met",
  );
  process.exit(0);
}

await main();
