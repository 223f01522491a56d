// Scale-out on a small machine: N instances of one service, each in a cgroup of its own with a
// fixed CPU quota, driven with the same work, so throughput that grows with N is scale-out and not
// a bigger share of the machine. Prints throughput, the scaling efficiency
// throughput(N) / (N x throughput(1)), and the CPU of every process taking part. A canary with
// fixed work, in a cgroup of its own at the instances' quota, shows how fast the machine itself
// ran in each round.
//
//   node bench/scale-out.ts --service dispatcher|matcher|gateway [--instances 1,2,4]
//                           [--cpu-quota 0.15] [--work N] [--tenants N (dispatcher)]
//                           [--one-busy (matcher, dispatcher)] [--cpu-period-ms 100]
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
  postgresCpuMsOf,
  postgresCpuMsSince,
  syscallsOf,
  userCpuMsOf,
} from "./support/cpu.ts";
import { sleep, stopChild } from "./support/processes.ts";

export interface ScaleRound {
  /** Units of work completed in the measured window. */
  completed: number;
  seconds: number;
  /** Service-specific findings, printed under the round. */
  notes: Array<[string, string]>;
}

export interface ScaleDriver {
  /** What a unit of work is, e.g. "deliveries". */
  unit: string;
  /** The Postgres database whose backends serve the instances. */
  database: string;
  /** Shared processes whose CPU is printed beside the instances', by name. */
  shared(): Record<string, number[]>;
  startInstance(index: number): Promise<ChildProcess>;
  /** Waits until `instances` are ready to take work (group joined, projections loaded). */
  settle(instances: readonly ChildProcess[]): Promise<void>;
  round(instances: readonly ChildProcess[]): Promise<ScaleRound>;
  close(): Promise<void>;
}

export interface ScaleOptions {
  instances: number[];
  cpuQuota: number;
  work: number | undefined;
  /** Dispatcher only: how many Team tenants the deliveries are spread over. */
  tenants?: number | undefined;
  /**
   * Matcher and dispatcher: every round's work is one instance's (its partitions, its share of
   * the tenants), the others stay in the group idle. A control: what that instance does against
   * one instance alone separates the cost of the group (membership, fewer partitions each) from
   * that of instances busy together.
   */
  oneBusy?: boolean;
  /**
   * The quota's period (Kubernetes uses 100 ms): an instance may run its share of each period,
   * then waits for the next. Shorter periods interleave the instances more finely.
   */
  cpuPeriodMs?: number;
}

const TARGETS: Record<number, number> = { 2: 0.9, 4: 0.85 };
const IDLE_MS = 3_000;

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
  const rates = new Map<number, number>();
  let canaryAtOne = Number.NaN;
  let met = true;
  for (const count of options.instances) {
    const { instances, quotas } = await startInstances(
      driver,
      count,
      options.cpuQuota,
      options.cpuPeriodMs ?? DEFAULT_PERIOD_MS,
    );
    prioritiseShared(driver, shared);
    try {
      // Instances in production run warm: unmeasured rounds first, as many as there are
      // instances, so each has done about one instance's round of work, compiled its hot paths
      // and grown its heap before it is judged. One round for every count left four instances
      // with a quarter of the warm-up each, still compiling and faulting in heap pages.
      let warm = await driver.round(instances);
      for (let extra = 1; extra < (options.oneBusy ? 1 : count); extra++) {
        warm = await driver.round(instances);
      }
      const warmRate = warm.completed / warm.seconds;
      // Backends the instances' pools opened during the warm-up.
      prioritiseShared(driver, shared);
      // What an instance spends with no work (polls, consumer fetches, heartbeats): a cost
      // every added instance pays, which the efficiency includes.
      const idle = readCpu(driver, instances);
      const canaryIdle = canary.mark();
      await sleep(IDLE_MS);
      const canaryIdleUs = canary.since(canaryIdle);
      const idleAfter = readCpu(driver, instances);
      const before = readCpu(driver, instances);
      const started = performance.now();
      const userBefore = instances.map((child) => userCpuMsOf(child.pid));
      const callsBefore = instances.map((child) => syscallsOf(child.pid));
      const canaryRound = canary.mark();
      const round = await driver.round(instances);
      const canaryRoundUs = canary.since(canaryRound);
      if (count === 1) {
        canaryAtOne = canaryRoundUs;
      }
      const userMs = instances.map((child, i) => userCpuMsOf(child.pid) - (userBefore[i] ?? 0));
      const calls = instances.map((child, i) => {
        const [now, then] = [syscallsOf(child.pid), callsBefore[i]];
        return {
          reads: now.reads - (then?.reads ?? Number.NaN),
          writes: now.writes - (then?.writes ?? Number.NaN),
          wakeups: now.wakeups - (then?.wakeups ?? Number.NaN),
        };
      });
      const allMs = instances.map((child, i) => cpuMsOf(child.pid) - (before.instances[i] ?? 0));
      const wallSeconds = (performance.now() - started) / 1000;
      const rate = round.completed / round.seconds;
      rates.set(count, rate);
      const one = rates.get(1);
      // With one busy instance, the figure is its rate against one instance alone.
      const efficiency =
        one === undefined ? Number.NaN : rate / ((options.oneBusy ? 1 : count) * one);
      const target = TARGETS[count];
      const verdict =
        target === undefined || Number.isNaN(efficiency) || options.oneBusy
          ? ""
          : efficiency >= target
            ? ` (target ≥ ${target}: met)`
            : ` (target ≥ ${target}: NOT met)`;
      if (target !== undefined && !options.oneBusy && !(efficiency >= target)) {
        met = false;
      }
      report(
        `${count} instance(s)`,
        `${rate.toFixed(0)} ${driver.unit}/s over ${round.seconds.toFixed(1)} s; ${options.oneBusy ? "against one instance alone" : "efficiency"} ${efficiency.toFixed(2)}${verdict}`,
      );
      report("  last warm-up round, not counted", `${warmRate.toFixed(0)} ${driver.unit}/s`);
      report(
        "  CPU of each instance while idle, before the round",
        idleAfter.instances
          .map((ms, i) => cpuPerSecond(ms - (idle.instances[i] ?? 0), IDLE_MS / 1000))
          .join(", "),
      );
      reportCpu(driver, instances, before, wallSeconds, quotas);
      // User CPU alone is the code's own work per unit; the rest is the kernel's (sockets).
      const perThousand = (ms: number[]) =>
        ((ms.reduce((sum, one) => sum + one, 0) * 1000) / round.completed).toFixed(0);
      report(
        `  CPU of the instances per 1,000 ${driver.unit}: user, all`,
        `${perThousand(userMs)} ms, ${perThousand(allMs)} ms`,
      );
      const perUnit = (key: "reads" | "writes" | "wakeups") =>
        (calls.reduce((sum, one) => sum + one[key], 0) / round.completed).toFixed(2);
      report(
        `  instances' syscalls per unit: reads, writes, wakeups`,
        `${perUnit("reads")}, ${perUnit("writes")}, ${perUnit("wakeups")}`,
      );
      // The same fixed work costing more during this round than during one instance's means
      // the machine ran slower for everyone, not that the service did more.
      report(
        "  machine canary, µs of CPU per unit: idle, this round",
        `${canaryIdleUs.toFixed(1)}, ${canaryRoundUs.toFixed(1)} (${(canaryRoundUs / canaryAtOne).toFixed(2)}x of one instance's round)`,
      );
      for (const [label, value] of round.notes) {
        report(`  ${label}`, value);
      }
    } finally {
      await Promise.all(instances.map((child) => stopChild(child)));
      for (const quota of quotas) {
        quota.remove();
      }
    }
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
    },
  });
  const options: ScaleOptions = {
    instances: (values.instances ?? "").split(",").map(Number),
    cpuQuota: Number(values["cpu-quota"]),
    work: values.work === undefined ? undefined : Number(values.work),
    tenants: values.tenants === undefined ? undefined : Number(values.tenants),
    oneBusy: values["one-busy"] ?? false,
    cpuPeriodMs: Number(values["cpu-period-ms"]),
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
