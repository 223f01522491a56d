import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { contracts, type LeadViewRecorded } from "@th/contracts";
import { createTestHarness } from "@th/service-kit/testing";
import { buildApp } from "../services/quota-ledger/src/app.ts";
import { readConfig } from "../services/quota-ledger/src/config.ts";
import { replayIntoShadow } from "../services/quota-ledger/src/consumers/rebuild.ts";
import { migrations } from "../services/quota-ledger/src/db/migrations.ts";
import {
  createShadowLedger,
  type ShadowRow,
} from "../services/quota-ledger/src/db/shadow-ledger.ts";
import { startBrokerProcess } from "./support/broker-process.ts";

const EVENTS = Number(process.argv[2] ?? 500_000);
const LIVE_SLICE = 20_000;
const ROUNDS = 3;
const TENANTS = 2_000;
const PUBLISH_BATCH = 5_000;

function report(label: string, value: string): void {
  process.stdout.write(`${label.padEnd(58)} ${value}\n`);
}

// A fresh log in a throwaway directory: the default data dir is the development broker's, and
// replaying whatever earlier runs left there would measure a different log each time.
const BROKER_DIR = mkdtempSync(join(tmpdir(), "ledger-replay-broker-"));

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

const broker = await startBrokerProcess(["--data-dir", BROKER_DIR]);
const harness = await createTestHarness({
  config: readConfig({}),
  migrations: [migrations],
  brokers: [broker.address],
  topics: [contracts.leadViewRecorded, contracts.tenantChanged],
});
try {
  const started = performance.now();
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

  // The machine may be shared: every variant runs once per round, interleaved, and each is
  // reported by its median round.
  const shadow = createShadowLedger(harness.pool);
  const rawReplay = async () => {
    const began = performance.now();
    let events = 0;
    await harness.bus.replay(contracts.leadViewRecorded, {
      onBatch: async (records) => {
        events += records.length;
      },
    });
    return events / ((performance.now() - began) / 1000);
  };
  // What the rebuild did before: one connection and one COPY per fetched batch, awaited.
  const perBatchCopy = async () => {
    await shadow.reset();
    const seen = new Set<string>();
    const began = performance.now();
    let events = 0;
    await harness.bus.replay(contracts.leadViewRecorded, {
      onBatch: async (records) => {
        events += records.length;
        const fresh: ShadowRow[] = [];
        for (const record of records) {
          const key = `${record.value.tenant_id}\u0000${record.value.day}\u0000${record.value.folio}`;
          if (!seen.has(key)) {
            seen.add(key);
            fresh.push(record);
          }
        }
        await shadow.insert(fresh);
      },
    });
    return events / ((performance.now() - began) / 1000);
  };
  const lanesReplay = (lanes: number) => async () => {
    const replay = await replayIntoShadow(harness.bus, shadow, { lanes });
    return replay.events / (replay.replayMs / 1000);
  };
  const variants = {
    raw: rawReplay,
    perBatch: perBatchCopy,
    lanes1: lanesReplay(1),
    lanes2: lanesReplay(2),
  };
  const rates: Record<keyof typeof variants, number[]> = {
    raw: [],
    perBatch: [],
    lanes1: [],
    lanes2: [],
  };
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, run] of Object.entries(variants)) {
      rates[name as keyof typeof variants].push(await run());
    }
  }
  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
  const baselineRate = median(rates.raw);
  const line = (label: string, rate: number) =>
    report(label, `${Math.round(rate)} events/s  ${(rate / baselineRate).toFixed(2)}x raw`);
  report(
    `baseline: raw replay (fetch + decode, no writes), median of ${ROUNDS}`,
    `${Math.round(baselineRate)} events/s`,
  );
  line("shadow ledger, one COPY per fetched batch (before)", median(rates.perBatch));
  const replayRate = median(rates.lanes1);
  line("shadow ledger, 1 COPY stream for the replay (the rebuild's)", replayRate);
  line("shadow ledger, 2 COPY streams (by partition)", median(rates.lanes2));
  const kept = await harness.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM lead_views_shadow",
  );
  report("rows kept in the shadow ledger", `${kept.rows[0]?.n}`);
  report("ratio: shadow-ledger replay / raw replay", `${(replayRate / baselineRate).toFixed(2)}x`);
  report("target", `>= 200000 events/s: ${replayRate >= 200_000 ? "met" : "NOT met"}`);

  // The live consumer writes one statement per fetched batch; measure it on a slice of the log.
  await harness.pool.query("TRUNCATE lead_views, period_usage");
  const live = await buildApp({ ...harness, config: { ...harness.config } });
  const liveStarted = performance.now();
  await live.start();
  for (;;) {
    const { rows } = await harness.pool.query<{ n: number }>(
      "SELECT coalesce(sum(lead_views), 0)::int AS n FROM period_usage",
    );
    if ((rows[0]?.n ?? 0) >= Math.min(LIVE_SLICE, kept.rows[0]?.n ?? 0)) {
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const liveRate = LIVE_SLICE / ((performance.now() - liveStarted) / 1000);
  await live.stop();
  report(
    `live consumer, batch inserts (first ~${LIVE_SLICE} rows)`,
    `${Math.round(liveRate)} events/s`,
  );
  report("ratio: live consumer / raw replay", `${(liveRate / baselineRate).toFixed(3)}x`);
} finally {
  await harness.close();
  await broker.stop();
  rmSync(BROKER_DIR, { recursive: true, force: true });
}
