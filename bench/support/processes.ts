// Child processes for benches: started with a ready line, stopped with SIGTERM (then SIGKILL),
// and the CPU of every process that takes part, read from /proc.
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";

export interface Started {
  child: ChildProcess;
  /** The ready line the child printed. */
  line: string;
}

/** Runs `node <args>` and resolves once a stdout line matches `ready`. */
export function spawnUntilReady(
  args: readonly string[],
  env: Record<string, string>,
  ready: RegExp,
  onLine?: (line: string) => void,
): Promise<Started> {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.on("line", (line) => {
      onLine?.(line);
      if (ready.test(line)) {
        resolve({ child, line });
      }
    });
    child.once("exit", (code) => reject(new Error(`${args[0]} exited with ${code}`)));
  });
}

/** SIGTERM, as an orchestrator stops a pod; SIGKILL after `graceMs`. */
export function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve();
      return;
    }
    const kill = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.once("exit", () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** Pids of the processes whose command line starts with `prefix` (e.g. "redis-server"). */
export function pidsOf(prefix: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) {
      continue;
    }
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").startsWith(prefix)) {
        pids.push(Number(entry));
      }
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
