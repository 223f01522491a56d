// A CPU quota for one process, through the kernel's cgroup cpu controller, so a scale-out bench
// measures instances of a fixed size rather than a bigger share of a small machine. Supports the
// cgroup v1 cpu controller (cpu.cfs_quota_us) and cgroup v2 (cpu.max); needs root.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const PERIOD_US = 100_000;

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
  quotaFiles(dir: string, cores: number): Array<[string, string]>;
}

/** Where the cpu controller is mounted and how a quota is written there, or why it cannot be. */
export function cpuControllerLayout(): Layout | string {
  const v1 = "/sys/fs/cgroup/cpu";
  if (existsSync(join(v1, "cpu.cfs_quota_us"))) {
    return {
      root: v1,
      quotaFiles: (dir, cores) => [
        [join(dir, "cpu.cfs_period_us"), String(PERIOD_US)],
        [join(dir, "cpu.cfs_quota_us"), String(Math.round(cores * PERIOD_US))],
      ],
    };
  }
  for (const v2 of ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]) {
    const controllers = join(v2, "cgroup.controllers");
    if (existsSync(controllers) && readFileSync(controllers, "utf8").split(/\s+/).includes("cpu")) {
      return {
        root: v2,
        quotaFiles: (dir, cores) => [
          [join(dir, "cpu.max"), `${Math.round(cores * PERIOD_US)} ${PERIOD_US}`],
        ],
      };
    }
  }
  return "no cgroup cpu controller is mounted (looked for /sys/fs/cgroup/cpu and a cgroup v2 'cpu' controller)";
}

/** The cpu.stat fields both versions share, in a form the bench can print. */
export function parseCpuStat(text: string): {
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
 * Makes a cgroup with a CPU quota of `cores` of one core. Throws with the cause when the quota
 * cannot be set: a bench must never fall back to an unquota'd figure.
 */
export function createCpuQuota(name: string, cores: number): CpuQuota {
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
    for (const [file, value] of layout.quotaFiles(path, cores)) {
      writeFileSync(file, value);
    }
  } catch (error) {
    throw new Error(`cannot set a CPU quota in ${path}: ${(error as Error).message}`);
  }
  return {
    path,
    cores,
    add(pid) {
      writeFileSync(join(path, "cgroup.procs"), String(pid));
    },
    throttling() {
      return parseCpuStat(readFileSync(join(path, "cpu.stat"), "utf8"));
    },
    remove() {
      try {
        rmdirSync(path);
      } catch {
        // Still busy: the kernel frees it when the last process leaves.
      }
    },
  };
}
