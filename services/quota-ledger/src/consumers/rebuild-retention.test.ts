import { Bus } from "@th/bus";
import { contracts, SINGLE_NODE_REPLICATION, topicPlan } from "@th/contracts";
import { type RunningBroker, startBroker } from "@th/dev-broker";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { createLogger } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { freshTenant, leadView, tenantChange } from "../testing/fixtures.ts";
import { rebuildLedger } from "./rebuild.ts";

// A broker whose every publish closes a segment, and leadview.recorded keeping about three of
// them, so the test can trim the log as a year of retention would. (The topic plan keeps it by
// time only; the test sizes it by bytes to trim it now.)
let broker: RunningBroker;
let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;
const now = new Date("2026-11-15T12:00:00Z");
const tenant = freshTenant("retention");

async function liveRows(): Promise<number> {
  const { rows } = await harness.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM lead_views WHERE tenant_id = $1",
    [tenant],
  );
  return rows[0]?.n ?? 0;
}

beforeAll(async () => {
  broker = await startBroker({
    port: 0,
    segmentBytes: 256,
    retentionBytes: 1024,
    retentionCheckIntervalMs: 3_600_000,
  });
  const setup = new Bus({
    brokers: broker.brokers,
    clientId: "retention-setup",
    logger: createLogger({ service: "test", level: "silent" }),
  });
  const [planned] = topicPlan(SINGLE_NODE_REPLICATION, [contracts.leadViewRecorded]);
  if (planned) {
    await setup.applyTopicPlan([
      { ...planned, configs: { ...planned.configs, "retention.bytes": "1024" } },
    ]);
  }
  await setup.close();
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [migrations],
    topics: [contracts.leadViewRecorded, contracts.leadViewVoided, contracts.tenantChanged],
    brokers: broker.brokers,
  });
  app = await buildApp(harness, { now: () => now });
  await app.start();
  await harness.bus.publish(contracts.tenantChanged, [
    tenantChange(tenant, 1, "starter", 500, "2026-11-05"),
  ]);
});
afterAll(async () => {
  await app.stop();
  await harness.close();
  await broker.stop();
});

describe("ledger rebuild after retention trimmed the log", () => {
  it("proves the ledger equal over what the log still holds and re-seeds Redis", async () => {
    for (let i = 0; i < 10; i++) {
      await harness.bus.publish(contracts.leadViewRecorded, [
        leadView(tenant, `F${i}`, `2026-11-15T10:00:0${i}.000Z`, "2026-11-05"),
      ]);
    }
    await vi.waitFor(async () => expect(await liveRows()).toBe(10), { timeout: 10_000 });
    expect(broker.enforceRetention()).toBeGreaterThan(0);
    // A later duplicate of a view whose first event is gone: the live ledger kept the first.
    await harness.bus.publish(contracts.leadViewRecorded, [
      leadView(tenant, "F0", "2026-11-15T11:00:00.000Z", "2026-11-05"),
      leadView(tenant, "F10", "2026-11-15T11:00:01.000Z", "2026-11-05"),
    ]);
    await vi.waitFor(async () => expect(await liveRows()).toBe(11), { timeout: 10_000 });

    const report = await rebuildLedger({
      pool: harness.pool,
      bus: harness.bus,
      redis: harness.redis,
      now: () => now,
      liveCatchUpTimeoutMs: 5000,
    });
    // The replay saw only what retention kept.
    expect(report.events).toBeLessThan(12);
    expect(report.differences).toEqual([]);
    expect(report.equal).toBe(true);
    expect(report.reseeded).toBeGreaterThan(0);
  });
});
