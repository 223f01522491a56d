// Every quickstart in examples/ (curl, Node with @th/client, Python with the standard library)
// run as written against `npm start`: the supervisor brings the whole stack up on free ports with
// a database of its own, and each script gets the printed demo key and base URL through the
// environment variables it reads. Webhook deliveries reach the scripts' local receivers through
// the dispatcher's development allowance for plain-HTTP loopback URLs.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { serverUrl } from "@th/db/testing";
import { parse } from "csv-parse/sync";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..");
// Below Linux's ephemeral range, so no outgoing connection of another test holds one of them.
const base = 20_000 + Math.floor(Math.random() * 12_000);
const names = [
  "GATEWAY",
  "BROKER",
  "KEYS",
  "QUOTA_LEDGER",
  "PARCELS",
  "MATCHER",
  "WEBHOOK_DISPATCHER",
  "GATEWAY_INTERNAL",
  "KEYS_INTERNAL",
  "QUOTA_LEDGER_INTERNAL",
  "PARCELS_INTERNAL",
  "MATCHER_INTERNAL",
  "WEBHOOK_DISPATCHER_INTERNAL",
];
const ports = Object.fromEntries(names.map((name, index) => [`${name}_PORT`, base + index]));
const baseUrl = `http://127.0.0.1:${ports.GATEWAY_PORT}`;
const database = `th_examples_${randomBytes(5).toString("hex")}`;
const databaseUrl = (() => {
  const url = new URL(serverUrl());
  url.pathname = `/${database}`;
  return url.toString();
})();
const FOLIO = "23-30418400000000";

let supervisor: ChildProcess | undefined;
let output = "";
let apiKey = "";

async function admin(sql: string) {
  const client = new pg.Client({ connectionString: serverUrl() });
  await client.connect();
  await client.query(sql);
  await client.end();
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  await admin(`CREATE DATABASE ${database}`);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...Object.fromEntries(Object.entries(ports).map(([name, port]) => [name, String(port)])),
    BROKER_DATA_DIR: mkdtempSync(join(tmpdir(), "th-examples-")),
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: "warn",
    // The development allowance the receivers on 127.0.0.1 need (refused in production).
    WEBHOOK_ALLOW_LOOPBACK_HTTP: "true",
  };
  delete env.KAFKA_BROKERS;
  supervisor = spawn(process.execPath, ["scripts/start.ts"], {
    cwd: root,
    env,
    stdio: "pipe",
    detached: true,
  });
  const up = new Promise<void>((resolve, reject) => {
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
    supervisor?.stdout?.on("data", check);
    supervisor?.stderr?.on("data", check);
    supervisor?.once("exit", (code) => reject(new Error(`npm start exited (${code}):\n${output}`)));
  });
  await up;
  // The key exactly as npm start prints it for the demo tenant.
  apiKey = output.match(/API key\s+(th_live_\S+)/)?.[1] ?? "";
}, 150_000);

afterAll(async () => {
  const running = supervisor;
  if (running?.pid !== undefined && running.exitCode === null) {
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill("SIGTERM");
    const timer = setTimeout(() => running.kill("SIGKILL"), 30_000);
    await exited;
    clearTimeout(timer);
  }
  await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
}, 60_000);

/** Runs one example as its header says, in a scratch directory, with npm start's key and URL. */
async function example(command: string, args: string[], extraEnv: Record<string, string> = {}) {
  const cwd = mkdtempSync(join(tmpdir(), "th-example-run-"));
  try {
    const { stdout } = await run(command, args, {
      cwd,
      timeout: 90_000,
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? "",
        TERMINAL_HOUSE_URL: baseUrl,
        TERMINAL_HOUSE_API_KEY: apiKey,
        ...extraEnv,
      },
    });
    return { stdout, cwd };
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${failed.message}\nstdout:\n${failed.stdout}\nstderr:\n${failed.stderr}`);
  }
}

const script = (...path: string[]) => join(root, "examples", ...path);
const languages = {
  curl: (task: string) => ["bash", [script("curl", `${task}.sh`)]] as const,
  node: (task: string) => [process.execPath, [script("node", `${task}.ts`)]] as const,
  python: (task: string) =>
    ["python3", [script("python", `${task.replace("-", "_")}.py`)]] as const,
};

async function remainingLeadViews(): Promise<number> {
  const response = await fetch(`${baseUrl}/v1/usage`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  return Number(response.headers.get("x-quota-lead-views-remaining"));
}

describe.each(Object.entries(languages))("examples/%s against npm start's demo tenant", (_, of) => {
  it("read-lead prints the lead and the lead-views left, as the API counts them", async () => {
    const [command, args] = of("read-lead");
    const { stdout } = await example(command, [...args]);
    expect(stdout).toContain(FOLIO);
    const left = Number(stdout.match(/quota left\s+(\d+) of 5000 lead-views/)?.[1]);
    // The same folio read again today is free, so the figure still stands.
    expect(left).toBe(await remainingLeadViews());
    expect(stdout).toMatch(/rate left\s+\d+ of 600 requests this minute/);
  });

  it("export-csv saves a CSV of leads with a header row", async () => {
    const [command, args] = of("export-csv");
    const { stdout, cwd } = await example(command, [...args]);
    const file = join(cwd, "leads.csv");
    expect(existsSync(file)).toBe(true);
    const rows = parse(readFileSync(file), { columns: true }) as { folio: string }[];
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(25);
    expect(stdout).toContain(`wrote ${rows.length} leads to leads.csv`);
    expect(rows.every((row) => row.folio.startsWith("23-"))).toBe(true);
  });

  it("mcp connects, lists the tools and calls get_lead", async () => {
    const [command, args] = of("mcp");
    const { stdout } = await example(command, [...args]);
    expect(stdout).toMatch(/tools: .*get_lead/);
    expect(stdout).toMatch(/tools: .*search_leads/);
    expect(stdout).toContain(`get_lead ${FOLIO}:`);
  });

  it("webhook creates a watchlist and a webhook, then receives and verifies a delivery locally", async () => {
    const [command, args] = of("webhook");
    const { stdout } = await example(command, [...args], {
      RECEIVER_PORT: String(await freePort()),
    });
    expect(stdout).toMatch(/watchlist \S+ created/);
    expect(stdout).toMatch(/delivery [0-9a-f-]{36} verified: 23-\d+ matched with score [\d.]+/);
    // The example cleans up after itself.
    const id = stdout.match(/watchlist (\S+) created/)?.[1];
    const after = await fetch(`${baseUrl}/v1/watchlists/${id}`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(after.status).toBe(404);
  }, 120_000);
});
