// A dev broker in a process of its own for a bench: its CPU can be read apart from the bench's,
// and the records it keeps are not in the bench's heap (its memory figures stay the bench's own).
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export interface BrokerProcess {
  address: string;
  port: number;
  pid: number | undefined;
  stop(): Promise<void>;
}

/**
 * Starts the broker on a free port with `args` (`--data-dir <dir>` or `--in-memory`); resolves
 * once it is ready.
 */
export async function startBrokerProcess(args: readonly string[]): Promise<BrokerProcess> {
  const child = spawn(
    process.execPath,
    [
      fileURLToPath(new URL("../../packages/dev-broker/src/cli.ts", import.meta.url)),
      ...["--port", "0", "--log-level", "error", ...args],
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const address = await new Promise<string>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`the dev broker exited with ${code}`)));
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once("line", (line) => {
      const ready = /ready on (\S+)/.exec(line)?.[1];
      if (ready === undefined) {
        reject(new Error(`unexpected ready line ${line}`));
      } else {
        resolve(ready);
      }
    });
  });
  return {
    address,
    port: Number(address.split(":").at(-1)),
    pid: child.pid,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) {
          resolve();
          return;
        }
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
