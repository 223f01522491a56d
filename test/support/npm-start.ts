// `npm start` as a user runs it (minus the bootstrap), on free ports with a database of its own,
// for tests that need the whole system as processes: the quickstarts and the metrics scrape.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serverUrl } from "@th/db/testing";
import pg from "pg";
import { type PrivateRedis, startPrivateRedis } from "./private-stores.ts";

const root = join(import.meta.dirname, "..", "..");
const SERVICES = [
  "GATEWAY",
  "KEYS",
  "QUOTA_LEDGER",
  "PARCELS",
  "MATCHER",
  "WEBHOOK_DISPATCHER",
  "PIPELINE",
];

async function admin(sql: string) {
  const client = new pg.Client({ connectionString: serverUrl() });
  await client.connect();
  await client.query(sql);
  await client.end();
}

export interface RunningStart {
  baseUrl: string;
  /** The demo tenant's API key, exactly as npm start prints it. */
  apiKey: string;
  /** Each service's probe and metrics port, by service name (gateway, keys, ...). */
  internalPorts: Record<string, number>;
  output: () => string;
  /** The stores and ports of this run, for a restart on the same ones. */
  stores: NpmStartStores;
  stop(): Promise<void>;
  /**
   * kill -9 of every process of the run (the supervisor, the broker and every service) at once,
   * as a machine losing power would; the stores are kept for a restart.
   */
  kill9(): Promise<void>;
}

export interface NpmStartStores {
  base: number;
  database: string;
  redis: PrivateRedis;
  brokerDataDir: string;
}

/** The processes whose environment names this run's broker directory (every one it started). */
function processesOf(brokerDataDir: string): number[] {
  const marker = `BROKER_DATA_DIR=${brokerDataDir}`;
  return readdirSync("/proc")
    .filter((pid) => /^\d+$/.test(pid))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number);
}

export async function startNpmStart(
  extraEnv: Record<string, string> = {},
  reuse?: NpmStartStores,
): Promise<RunningStart> {
  // Below Linux's ephemeral range, so no outgoing connection of another test holds one of them.
  const base = reuse?.base ?? 20_000 + Math.floor(Math.random() * 12_000);
  const ports: Record<string, number> = { BROKER_PORT: base + 1 };
  SERVICES.forEach((service, index) => {
    ports[`${service}_PORT`] = base + 2 + index;
    ports[`${service}_INTERNAL_PORT`] = base + 10 + index;
  });
  const database = reuse?.database ?? `th_npm_start_${randomBytes(5).toString("hex")}`;
  const url = new URL(serverUrl());
  url.pathname = `/${database}`;
  if (!reuse) {
    await admin(`CREATE DATABASE ${database}`);
  }
  // A Redis of its own: stacks started side by side by the suite would otherwise rebuild each
  // other's edge state (key index, windows) in the one shared server.
  const redis = reuse?.redis ?? (await startPrivateRedis());
  const brokerDataDir = reuse?.brokerDataDir ?? mkdtempSync(join(tmpdir(), "th-npm-start-"));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...Object.fromEntries(Object.entries(ports).map(([name, port]) => [name, String(port)])),
    BROKER_DATA_DIR: brokerDataDir,
    DATABASE_URL: url.toString(),
    REDIS_URL: redis.url,
    LOG_LEVEL: "warn",
    ...extraEnv,
  };
  delete env.KAFKA_BROKERS;
  let output = "";
  const supervisor: ChildProcess = spawn(process.execPath, ["scripts/start.ts"], {
    cwd: root,
    env,
    stdio: "pipe",
    detached: true,
  });
  async function stop() {
    if (supervisor.pid !== undefined && supervisor.exitCode === null) {
      const exited = new Promise((resolve) => supervisor.once("exit", resolve));
      supervisor.kill("SIGTERM");
      const timer = setTimeout(() => supervisor.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(timer);
    }
    await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await redis.destroy();
    rmSync(brokerDataDir, { recursive: true, force: true });
  }
  async function kill9() {
    const exited =
      supervisor.exitCode === null && supervisor.signalCode === null
        ? new Promise((resolve) => supervisor.once("exit", resolve))
        : Promise.resolve();
    for (const pid of processesOf(brokerDataDir)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone already.
      }
    }
    await exited;
    // Every process, not only the supervisor, is gone before the stores are used again.
    const deadline = Date.now() + 10_000;
    while (processesOf(brokerDataDir).length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`npm start did not come up:\n${output}`)),
        120_000,
      );
      const check = (chunk: Buffer) => {
        output += chunk;
        if (/Terminal House is up/.test(output) && /API key\s+th_live_\S+/.test(output)) {
          clearTimeout(timer);
          resolve();
        }
      };
      supervisor.stdout?.on("data", check);
      supervisor.stderr?.on("data", check);
      supervisor.once("exit", (code) =>
        reject(new Error(`npm start exited (${code}):\n${output}`)),
      );
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    baseUrl: `http://127.0.0.1:${ports.GATEWAY_PORT}`,
    apiKey: output.match(/API key\s+(th_live_\S+)/)?.[1] ?? "",
    internalPorts: Object.fromEntries(
      SERVICES.map((service) => [
        service.toLowerCase().replaceAll("_", "-"),
        ports[`${service}_INTERNAL_PORT`] as number,
      ]),
    ),
    output: () => output,
    stores: { base, database, redis, brokerDataDir },
    stop,
    kill9,
  };
}
