// A dev broker in a process of its own, on a free port with a log directory that outlives it,
// for fault tests: `kill` is kill -9 (nothing flushed, nothing closed), and `start` runs a new
// broker on the same port and directory, as an operator restarting it would.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export interface BrokerProcess {
  readonly brokers: string[];
  readonly port: number;
  readonly dataDir: string;
  /** SIGKILL: the broker's process ends at once, mid-write if it was writing. */
  kill(): Promise<void>;
  /** Runs a broker again on the same port and log directory. */
  start(): Promise<void>;
  /** Kills it (if running) and removes its log directory. */
  destroy(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function startBrokerProcess(
  options: { port?: number; dataDir?: string } = {},
): Promise<BrokerProcess> {
  const port = options.port ?? (await freePort());
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "th-broker-process-"));
  const cli = fileURLToPath(new URL("../cli.ts", import.meta.url));
  let child: ChildProcess | undefined;

  const start = async () => {
    const args = [cli, "--port", String(port), "--data-dir", dataDir, "--log-level", "error"];
    const spawned = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
    child = spawned;
    let output = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`broker did not start: ${output}`)), 20_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes("ready on")) {
          clearTimeout(timer);
          spawned.stdout?.off("data", onData);
          spawned.stdout?.resume();
          resolve();
        }
      };
      spawned.stdout?.on("data", onData);
      spawned.stderr?.on("data", (chunk: Buffer) => {
        output += chunk.toString();
      });
      spawned.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`broker exited with ${code}: ${output}`));
      });
    });
  };

  const kill = async () => {
    const current = child;
    child = undefined;
    if (current && current.exitCode === null && current.signalCode === null) {
      const exited = new Promise((resolve) => current.once("exit", resolve));
      current.kill("SIGKILL");
      await exited;
    }
  };

  await start();
  return {
    brokers: [`127.0.0.1:${port}`],
    port,
    dataDir,
    kill,
    start,
    async destroy() {
      await kill();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
