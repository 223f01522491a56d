// Every quickstart in examples/ (curl, Node with @th/client, Python with the standard library)
// run as written against `npm start`: the supervisor brings the whole stack up on free ports with
// a database of its own, and each script gets the printed demo key and base URL through the
// environment variables it reads. Webhook deliveries reach the scripts' local receivers through
// the dispatcher's development allowance for plain-HTTP loopback URLs.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { parse } from "csv-parse/sync";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningStart, startNpmStart } from "./support/npm-start.ts";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..");
const FOLIO = "23-30418400000000";

let stack: RunningStart;
let baseUrl = "";
let apiKey = "";

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
  // The development allowance the receivers on 127.0.0.1 need (refused in production).
  stack = await startNpmStart({ WEBHOOK_ALLOW_LOOPBACK_HTTP: "true" });
  baseUrl = stack.baseUrl;
  apiKey = stack.apiKey;
}, 150_000);

afterAll(() => stack?.stop(), 60_000);

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
