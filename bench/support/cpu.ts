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
 * CPU milliseconds used so far by each Postgres backend serving a database, by pid, with the
 * parallel workers a backend of it started (an index build's, whose command line names the
 * leader's pid, not the database). Backends that exit between two readings are lost, so a
 * difference of two readings is a floor.
 */
export function postgresCpuMsOf(database: string): Map<number, number> {
  const byPid = new Map<number, number>();
  const workers: [pid: number, leader: number][] = [];
  for (const [pid, cmdline] of postgresProcesses()) {
    if (cmdline.includes(` ${database} `)) {
      byPid.set(pid, cpuMsOf(pid));
      continue;
    }
    const leader = /parallel worker for PID (\d+)/.exec(cmdline)?.[1];
    if (leader !== undefined) {
      workers.push([pid, Number(leader)]);
    }
  }
  for (const [pid, leader] of workers) {
    if (byPid.has(leader)) {
      byPid.set(pid, cpuMsOf(pid));
    }
  }
  return byPid;
}

/** The command line of every Postgres server process, by pid; none without /proc. */
function postgresProcesses(): [pid: number, cmdline: string][] {
  const found: [number, string][] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync("/proc");
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) {
      continue;
    }
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.startsWith("postgres: ")) {
        found.push([Number(entry), cmdline]);
      }
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

export function postgresCpuMsSince(database: string, before: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of postgresCpuMsOf(database)) {
    total += ms - (before.get(pid) ?? 0);
  }
  return total;
}

/**
 * A process's read and write system calls so far (`/proc/<pid>/io`) and its voluntary context
 * switches (how often it slept waiting for I/O, so how often its event loop woke); NaN when
 * unreadable. Per unit of work they show the kernel's share that CPU time alone hides.
 */
export function syscallsOf(pid: number | undefined): {
  reads: number;
  writes: number;
  wakeups: number;
} {
  const field = (text: string, name: string) =>
    Number(new RegExp(`^${name}:\\s*(\\d+)`, "m").exec(text)?.[1] ?? Number.NaN);
  try {
    const io = readFileSync(`/proc/${pid}/io`, "utf8");
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return {
      reads: field(io, "syscr"),
      writes: field(io, "syscw"),
      wakeups: field(status, "voluntary_ctxt_switches"),
    };
  } catch {
    return { reads: Number.NaN, writes: Number.NaN, wakeups: Number.NaN };
  }
}

/** The whole machine's busy and total CPU milliseconds so far, every core and process (/proc/stat). */
export function machineCpuMs(): { busy: number; total: number } {
  try {
    const fields = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "")
      .trim()
      .split(/\s+/)
      .slice(1, 9)
      .map(Number);
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
    const total = fields.reduce((sum, value) => sum + value, 0);
    return { busy: (total - idle) * 10, total: total * 10 };
  } catch {
    return { busy: Number.NaN, total: Number.NaN };
  }
}
