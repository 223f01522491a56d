// `npm start` as a user runs it (minus the bootstrap), on free ports with a database of its own,
// for tests that need the whole system as processes: the quickstarts and the metrics scrape.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { serverUrl } from "@th/db/testing";
import pg from "pg";
import { startPrivateRedis } from "./private-stores.ts";

const root = join(import.meta.dirname, "..", "..");
const SERVICES = ["GATEWAY", "KEYS", "QUOTA_LEDGER", "PARCELS", "MATCHER", "WEBHOOK_DISPATCHER"];

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
  stop(): Promise<void>;
}

export async function startNpmStart(extraEnv: Record<string, string> = {}): Promise<RunningStart> {
  // Below Linux's ephemeral range, so no outgoing connection of another test holds one of them.
  const base = 20_000 + Math.floor(Math.random() * 12_000);
  const ports: Record<string, number> = { BROKER_PORT: base + 1 };
  SERVICES.forEach((service, index) => {
    ports[`${service}_PORT`] = base + 2 + index;
    ports[`${service}_INTERNAL_PORT`] = base + 10 + index;
  });
  const database = `th_npm_start_${randomBytes(5).toString("hex")}`;
  const url = new URL(serverUrl());
  url.pathname = `/${database}`;
  await admin(`CREATE DATABASE ${database}`);
  // A Redis of its own: stacks started side by side by the suite would otherwise rebuild each
  // other's edge state (key index, windows) in the one shared server.
  const redis = await startPrivateRedis();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...Object.fromEntries(Object.entries(ports).map(([name, port]) => [name, String(port)])),
    BROKER_DATA_DIR: mkdtempSync(join(tmpdir(), "th-npm-start-")),
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
    stop,
  };
}
