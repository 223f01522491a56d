// Runs the CLI in a child process so tests can SIGKILL a broker mid-write.
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export interface ChildBroker {
  process: ChildProcess;
  address: string;
}

export function spawnCliBroker(args: string[]): Promise<ChildBroker> {
  const cli = fileURLToPath(new URL("../cli.ts", import.meta.url));
  const child = spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`broker did not start: ${stderr}`)), 10_000);
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once("line", (line) => {
      clearTimeout(timer);
      const match = /ready on (\S+)/.exec(line);
      if (match?.[1] === undefined) {
        reject(new Error(`unexpected ready line: ${line}`));
        return;
      }
      resolve({ process: child, address: match[1] });
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`broker exited with ${code}: ${stderr}`));
    });
  });
}

export function waitForExit(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve(child.exitCode);
  }
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}
