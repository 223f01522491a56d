// CPU accounting for benches, from Linux /proc: what a process, or the Postgres backends of one
// database, used during a phase, so each side's share shows beside the throughput.
import { readdirSync, readFileSync } from "node:fs";

/** A process's user and system CPU milliseconds so far (clock ticks of 10 ms); NaN if unreadable. */
function cpuTimesOf(pid: number | undefined): { user: number; system: number } {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return { user: Number(fields[11]) * 10, system: Number(fields[12]) * 10 };
  } catch {
    return { user: Number.NaN, system: Number.NaN };
  }
}

/** CPU milliseconds (user + system) a process has used so far; NaN when it cannot be read. */
export function cpuMsOf(pid: number | undefined): number {
  const { user, system } = cpuTimesOf(pid);
  return user + system;
}

/** User CPU milliseconds a process has used so far (its own code, not the kernel's work). */
export function userCpuMsOf(pid: number | undefined): number {
  return cpuTimesOf(pid).user;
}

/**
 * CPU milliseconds used so far by each Postgres backend serving a database, by pid. Backends
 * that exit between two readings are lost, so a difference of two readings is a floor.
 */
export function postgresCpuMsOf(database: string): Map<number, number> {
  const byPid = new Map<number, number>();
  try {
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) {
        continue;
      }
      try {
        const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
        if (cmdline.startsWith("postgres: ") && cmdline.includes(` ${database} `)) {
          byPid.set(Number(entry), cpuMsOf(Number(entry)));
        }
      } catch {
        // Gone meanwhile.
      }
    }
  } catch {
    // No /proc here.
  }
  return byPid;
}

/** The CPU milliseconds the database's backends used since `before` was read. */
export function postgresCpuMsSince(database: string, before: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of postgresCpuMsOf(database)) {
    total += ms - (before.get(pid) ?? 0);
  }
  return total;
}
