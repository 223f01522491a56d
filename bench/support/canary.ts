// Runs the machine canary (canary-child.ts) in a cgroup with a quota of its own, and reads
// its CPU per unit over a phase: the same work costing more means the machine is slower, not
// the code under test.
import { fileURLToPath } from "node:url";
import { createCpuQuota } from "./cgroup.ts";
import { spawnUntilReady, stopChild } from "./processes.ts";

const CHILD = fileURLToPath(new URL("./canary-child.ts", import.meta.url));

interface CanaryMark {
  units: number;
  cpuMs: number;
}

export interface Canary {
  /** What the canary had done by its last report. */
  mark(): CanaryMark;
  /** Microseconds of CPU per unit since `from`; NaN when too few units were done to tell. */
  since(from: CanaryMark): number;
  stop(): Promise<void>;
}

/**
 * Starts the canary under the instances' own quota and period, so that it sees the machine as an
 * instance does (a thawed process meets caches its neighbours used meanwhile).
 */
export async function startCanary(name: string, cores: number, periodMs: number): Promise<Canary> {
  let latest: CanaryMark = { units: 0, cpuMs: 0 };
  const { child } = await spawnUntilReady([CHILD], {}, /^ready$/, (line) => {
    const [units, cpuMs] = line.split(" ").map(Number);
    if (units !== undefined && cpuMs !== undefined && !Number.isNaN(cpuMs)) {
      latest = { units, cpuMs };
    }
  });
  const quota = createCpuQuota(name, cores, periodMs);
  quota.add(child.pid as number);
  return {
    mark: () => latest,
    since(from) {
      const units = latest.units - from.units;
      return units < 100 ? Number.NaN : ((latest.cpuMs - from.cpuMs) * 1000) / units;
    },
    async stop() {
      await stopChild(child, 2_000);
      quota.remove();
    },
  };
}
