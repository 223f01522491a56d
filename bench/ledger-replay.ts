// Quota-ledger replay throughput: leadview.recorded read from offset 0 into the shadow ledger.
// Run from the repository root: node bench/ledger-replay.ts [events]
// Needs Postgres and Redis (DATABASE_URL, REDIS_URL; the bootstrap's defaults otherwise). The
// dev broker runs in its own process, as in development. The baseline, measured in the same
// run on the same log, is the raw replay (fetch + Avro decode) with no database writes; the
// ratio says what the shadow-ledger writes cost on top of reading the log. The live consumer's
// per-record inserts are measured on a smaller slice for comparison.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { contracts, type LeadViewRecorded } from "@th/contracts";
import { createTestHarness } from "@th/service-kit/testing";
import { buildApp } from "../services/quota-ledger/src/app.ts";
import { readConfig } from "../services/quota-ledger/src/config.ts";
import { replayIntoShadow } from "../services/quota-ledger/src/consumers/rebuild.ts";
import { migrations } from "../services/quota-ledger/src/db/migrations.ts";
import { createShadowLedger } from "../services/quota-ledger/src/db/shadow-ledger.ts";

const EVENTS = Number(process.argv[2] ?? 500_000);
const LIVE_SLICE = 20_000;
const TENANTS = 2_000;
const PUBLISH_BATCH = 5_000;
const CLI = fileURLToPath(new URL("../packages/dev-broker/src/cli.ts", import.meta.url));

function report(label: string, value: string): void {
  process.stdout.write(`${label.padEnd(58)} ${value}\n`);
}

// A fresh log in a throwaway directory: the default data dir is the development broker's, and
// replaying whatever earlier runs left there would measure a different log each time.
const BROKER_DIR = mkdtempSync(join(tmpdir(), "ledger-replay-broker-"));

function spawnBroker(): Promise<{ child: ChildProcess; address: string }> {
  const child = spawn(
    process.execPath,
    [CLI, "--port", "0", "--log-level", "error", "--data-dir", BROKER_DIR],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once("line", (line) => {
      const address = /ready on (\S+)/.exec(line)?.[1];
      if (address === undefined) {
        reject(new Error(`unexpected ready line ${line}`));
        return;
      }
      resolve({ child, address });
    });
  });
}

/** Realistic mix: ~2 % of events are duplicates of an earlier one (producer retries). */
function viewAt(index: number): LeadViewRecorded {
  const source = index % 50 === 49 ? index - 7 : index;
  const tenant = source % TENANTS;
  const day = 1 + (Math.floor(source / TENANTS) % 28);
  const dayText = `2026-11-${String(day).padStart(2, "0")}`;
  return {
    tenant_id: `ten_bench_${tenant}`,
    folio: `${String(source).padStart(12, "0")}`,
    day: dayText,
    billing_period_start: "2026-11-01",
    surface: "rest",
    request_id: `req_${source}`,
    key_id: `key_${tenant}`,
    member_id: `mem_${tenant}`,
    recorded_at: `${dayText}T12:00:00.000Z`,
  };
}

const broker = await spawnBroker();
const harness = await createTestHarness({
  config: readConfig({}),
  migrations: [migrations],
  brokers: [broker.address],
  topics: [contracts.leadViewRecorded, contracts.tenantChanged],
});
try {
  let started = performance.now();
  for (let offset = 0; offset < EVENTS; offset += PUBLISH_BATCH) {
    const batch = Array.from({ length: Math.min(PUBLISH_BATCH, EVENTS - offset) }, (_, index) =>
      viewAt(offset + index),
    );
    await harness.bus.publish(contracts.leadViewRecorded, batch);
  }
  report(
    `published ${EVENTS} leadview.recorded events`,
    `${Math.round(EVENTS / ((performance.now() - started) / 1000))} events/s`,
  );

  // Baseline: the same replay with nothing written.
  started = performance.now();
  let baselineEvents = 0;
  await harness.bus.replay(contracts.leadViewRecorded, {
    onBatch: async (records) => {
      baselineEvents += records.length;
    },
  });
  const baselineRate = baselineEvents / ((performance.now() - started) / 1000);
  report(
    "baseline: raw replay (fetch + decode, no writes)",
    `${Math.round(baselineRate)} events/s`,
  );

  const shadow = createShadowLedger(harness.pool);
  const replay = await replayIntoShadow(harness.bus, shadow);
  const replayRate = replay.events / (replay.replayMs / 1000);
  report(
    `replay into shadow ledger (${replay.leadViews} rows kept)`,
    `${Math.round(replayRate)} events/s`,
  );
  report("ratio: shadow-ledger replay / raw replay", `${(replayRate / baselineRate).toFixed(2)}x`);
  report("target", `>= 200000 events/s: ${replayRate >= 200_000 ? "met" : "NOT met"}`);

  // The live consumer writes one record per statement; measure it on a slice of the log.
  await harness.pool.query("TRUNCATE lead_views, period_usage");
  const live = await buildApp({ ...harness, config: { ...harness.config } });
  const liveStarted = performance.now();
  await live.start();
  for (;;) {
    const { rows } = await harness.pool.query<{ n: number }>(
      "SELECT coalesce(sum(lead_views), 0)::int AS n FROM period_usage",
    );
    if ((rows[0]?.n ?? 0) >= Math.min(LIVE_SLICE, replay.leadViews)) {
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const liveRate = LIVE_SLICE / ((performance.now() - liveStarted) / 1000);
  await live.stop();
  report(
    `live consumer, per-record inserts (first ~${LIVE_SLICE} rows)`,
    `${Math.round(liveRate)} events/s`,
  );
  report("ratio: live consumer / raw replay", `${(liveRate / baselineRate).toFixed(3)}x`);
} finally {
  await harness.close();
  await new Promise((resolve) => {
    broker.child.once("exit", resolve);
    broker.child.kill("SIGTERM");
  });
  rmSync(BROKER_DIR, { recursive: true, force: true });
}
