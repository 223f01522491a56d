// A CPU quota for one process, through the kernel's cgroup cpu controller, so a scale-out bench
// measures instances of a fixed size rather than a bigger share of a small machine. Supports the
// cgroup v1 cpu controller (cpu.cfs_quota_us) and cgroup v2 (cpu.max); needs root.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Kubernetes's CFS period for a container's CPU limit. */
export const DEFAULT_PERIOD_MS = 100;

export interface CpuQuota {
  readonly path: string;
  /** The share of one core this group may use per period, e.g. 0.15. */
  readonly cores: number;
  /** Moves a running process (and the threads it starts from then on) into the group. */
  add(pid: number): void;
  /** Periods the group ran out of quota, and the time it was held back, so far. */
  throttling(): { periods: number; throttled: number; throttledMs: number };
  /** Removes the group; its processes must have exited or moved. */
  remove(): void;
}

interface Layout {
  root: string;
  quotaFiles(dir: string, cores: number, periodUs: number): Array<[string, string]>;
  /** The highest CPU weight: the group is served before the neighbours in the root group. */
  weightFile(dir: string): [string, string];
}

/** Where the cpu controller is mounted and how a quota is written there, or why it cannot be. */
function cpuControllerLayout(): Layout | string {
  const v1 = "/sys/fs/cgroup/cpu";
  if (existsSync(join(v1, "cpu.cfs_quota_us"))) {
    return {
      root: v1,
      quotaFiles: (dir, cores, periodUs) => [
        [join(dir, "cpu.cfs_period_us"), String(periodUs)],
        [join(dir, "cpu.cfs_quota_us"), String(Math.round(cores * periodUs))],
      ],
      weightFile: (dir) => [join(dir, "cpu.shares"), "262144"],
    };
  }
  for (const v2 of ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]) {
    const controllers = join(v2, "cgroup.controllers");
    if (existsSync(controllers) && readFileSync(controllers, "utf8").split(/\s+/).includes("cpu")) {
      return {
        root: v2,
        quotaFiles: (dir, cores, periodUs) => [
          [join(dir, "cpu.max"), `${Math.round(cores * periodUs)} ${periodUs}`],
        ],
        weightFile: (dir) => [join(dir, "cpu.weight"), "10000"],
      };
    }
  }
  return "no cgroup cpu controller is mounted (looked for /sys/fs/cgroup/cpu and a cgroup v2 'cpu' controller)";
}

/** The cpu.stat fields both versions share, in a form the bench can print. */
function parseCpuStat(text: string): {
  periods: number;
  throttled: number;
  throttledMs: number;
} {
  const fields = new Map(
    text
      .trim()
      .split("\n")
      .map((line) => line.split(/\s+/) as [string, string])
      .map(([key, value]) => [key, Number(value)] as const),
  );
  const throttledMs =
    fields.get("throttled_usec") !== undefined
      ? (fields.get("throttled_usec") ?? 0) / 1000
      : (fields.get("throttled_time") ?? 0) / 1e6;
  return {
    periods: fields.get("nr_periods") ?? 0,
    throttled: fields.get("nr_throttled") ?? 0,
    throttledMs,
  };
}

/**
 * Makes a cgroup that may use `cores` of one core in every period of `periodMs`, at the highest
 * CPU weight, so that a neighbour loading the machine cannot hold the group below its quota: the
 * quota is what binds. Throws with the cause when the quota cannot be set: a bench must never
 * fall back to an unquota'd figure.
 */
export function createCpuQuota(
  name: string,
  cores: number,
  periodMs: number = DEFAULT_PERIOD_MS,
): CpuQuota {
  return {
    ...createGroup(name, (layout, path) => layout.quotaFiles(path, cores, periodMs * 1000)),
    cores,
  };
}

/**
 * A cgroup at the highest CPU weight with no quota, for the processes every instance shares (the
 * broker, the database backends, the load source), so they answer as on a quiet machine.
 */
export function createCpuPriority(name: string): Omit<CpuQuota, "cores"> {
  return createGroup(name, () => []);
}

function createGroup(
  name: string,
  limits: (layout: Layout, path: string) => Array<[string, string]>,
): Omit<CpuQuota, "cores"> {
  const layout = cpuControllerLayout();
  if (typeof layout === "string") {
    throw new Error(layout);
  }
  if (layout.root !== "/sys/fs/cgroup/cpu") {
    // cgroup v2 hands the cpu controller to children only when the parent enables it.
    try {
      writeFileSync(join(layout.root, "cgroup.subtree_control"), "+cpu");
    } catch {
      // Already enabled, or the next write says why.
    }
  }
  const path = join(layout.root, name);
  try {
    mkdirSync(path, { recursive: true });
    for (const [file, value] of [...limits(layout, path), layout.weightFile(path)]) {
      writeFileSync(file, value);
    }
  } catch (error) {
    throw new Error(`cannot set CPU limits in ${path}: ${(error as Error).message}`);
  }
  return {
    path,
    add(pid) {
      writeFileSync(join(path, "cgroup.procs"), String(pid));
    },
    throttling() {
      return parseCpuStat(readFileSync(join(path, "cpu.stat"), "utf8"));
    },
    remove() {
      // Whatever still runs in the group (a pooled database backend) goes back to the root.
      for (const pid of readFileSync(join(path, "cgroup.procs"), "utf8").split("\n")) {
        if (pid !== "") {
          try {
            writeFileSync(join(layout.root, "cgroup.procs"), pid);
          } catch {
            // Exited meanwhile.
          }
        }
      }
      try {
        rmdirSync(path);
      } catch {
        // Still busy: the kernel frees it when the last process leaves.
      }
    },
  };
}
