// Demo data for `npm start`: the sample roll in the parcel store and a demo tenant (Team tier,
// on trial) whose API key is printed. The key is kept in .data, a file per database, so a restart
// reuses the same tenant; a key that no longer works is replaced by a fresh trial.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runNodeToEnd } from "./run-to-end.ts";

export interface DemoContext {
  baseUrl: string;
  root: string;
  env: NodeJS.ProcessEnv;
  say: (message: string) => void;
}

const SAMPLE_ROLL = join("services", "parcels", "sample", "NAL23F202501.csv");

async function ingestSampleRoll(context: DemoContext): Promise<void> {
  await runNodeToEnd(
    [join("services", "parcels", "src", "ingest", "cli.ts"), "--no-rejects", SAMPLE_ROLL],
    {
      cwd: context.root,
      env: context.env,
      failure: (output) => `sample roll ingest failed:\n${output}`,
    },
  );
}

async function keyStillWorks(baseUrl: string, key: string): Promise<boolean> {
  const response = await fetch(`${baseUrl}/v1/me`, { headers: { authorization: `Bearer ${key}` } });
  return response.status === 200;
}

/**
 * Waits until the gateway accepts a new key: the key and its tenant reach the gateway through
 * the bus, a moment after the trial answered, and the key printed must work when it is read.
 */
async function untilKeyWorks(baseUrl: string, key: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await keyStillWorks(baseUrl, key))) {
    if (Date.now() > deadline) {
      throw new Error("the demo key was not accepted by the gateway within 30 s");
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The demo admin's dashboard password; a local demo only, never a real account. */
const DEMO_PASSWORD = "demo-dashboard-password";

async function startDemoTrial(baseUrl: string): Promise<{ key: string; tenantId: string }> {
  const response = await fetch(`${baseUrl}/v1/public/trials`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      tier: "team",
      company: "Demo Realty LLC",
      admin_email: "demo@demo-realty.example",
      payment_method: "pm_card_visa",
      admin_password: DEMO_PASSWORD,
    }),
  });
  if (response.status !== 201) {
    throw new Error(`demo trial could not start: ${response.status} ${await response.text()}`);
  }
  const body = (await response.json()) as { tenant: { id: string }; api_key: { secret: string } };
  return { key: body.api_key.secret, tenantId: body.tenant.id };
}

/** The demo tenant a previous run saved; none when absent or unreadable. */
function readSavedDemo(file: string): { key: string; tenantId: string } | undefined {
  if (!existsSync(file)) {
    return undefined;
  }
  try {
    return JSON.parse(readFileSync(file, "utf8")) as { key: string; tenantId: string };
  } catch {
    return undefined;
  }
}

/**
 * Where the demo key is kept: one file per database, as a key belongs to the database it was
 * issued in. Stacks on other databases (the test suite runs several at once) share the local
 * Redis, where another stack's key can look valid for a moment; they never pick each other's up.
 */
function savedDemoFile(context: DemoContext): string {
  const url = context.env.DATABASE_URL;
  const database = url ? new URL(url).pathname.slice(1) : "";
  return join(context.root, ".data", database ? `demo-${database}.json` : "demo.json");
}

export async function seedDemo(context: DemoContext): Promise<string[]> {
  context.say("ingesting the sample roll (Miami-Dade, 300 parcels)");
  await ingestSampleRoll(context);
  const file = savedDemoFile(context);
  let demo: { key: string; tenantId: string } | undefined;
  const saved = readSavedDemo(file);
  if (saved && (await keyStillWorks(context.baseUrl, saved.key))) {
    demo = saved;
  }
  if (!demo) {
    demo = await startDemoTrial(context.baseUrl);
    await untilKeyWorks(context.baseUrl, demo.key);
    mkdirSync(join(context.root, ".data"), { recursive: true });
    // Written aside and renamed: another run starting at the same moment (the test suite starts
    // several) never reads a half-written file.
    const partial = `${file}.${process.pid}`;
    writeFileSync(partial, JSON.stringify(demo, null, 2), { mode: 0o600 });
    renameSync(partial, file);
  }
  const auth = `-H "Authorization: Bearer ${demo.key}"`;
  return [
    `  Demo tenant   ${demo.tenantId} (Team tier, 14-day trial), sample roll loaded`,
    `  API key       ${demo.key}`,
    `  Dashboard     ${context.baseUrl}/  sign in as demo@demo-realty.example / ${DEMO_PASSWORD}`,
    `  Try           curl ${auth} "${context.baseUrl}/v1/leads?county=23&limit=3"`,
    `                curl ${auth} ${context.baseUrl}/v1/usage`,
  ];
}
