import { spawn } from "node:child_process";
import { contracts } from "@th/contracts";
import { createLeadViewMeter } from "@th/quota";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { createShadowLedger } from "../db/shadow-ledger.ts";
import { currentPeriod } from "../domain/period.ts";
import { freshTenant, leadView, signedGet, tenantChange } from "../testing/fixtures.ts";
import { formatRebuildReport, rebuildLedger, replayIntoShadow } from "./rebuild.ts";

let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;
const now = new Date("2026-11-15T12:00:00Z");
const tenantA = freshTenant("rebuild_a");
const tenantB = freshTenant("rebuild_b");

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [migrations],
    topics: [contracts.leadViewRecorded, contracts.leadViewVoided, contracts.tenantChanged],
  });
  app = await buildApp(harness, { now: () => now });
  await app.start();
  await harness.bus.publish(contracts.tenantChanged, [
    tenantChange(tenantA, 1, "starter", 500, "2026-10-05"),
    tenantChange(tenantB, 1, "operator", 2000, "2026-09-20"),
  ]);
  const views = [
    leadView(tenantA, "A1", "2026-11-14T10:00:00.000Z", "2026-11-05"),
    leadView(tenantA, "A2", "2026-11-15T10:00:00.000Z", "2026-11-05"),
    leadView(tenantA, "A3", "2026-11-15T11:00:00.000Z", "2026-11-05"),
    leadView(tenantA, "A1", "2026-11-01T10:00:00.000Z", "2026-10-05"),
    leadView(tenantB, "B1", "2026-11-15T08:00:00.000Z", "2026-10-20"),
  ];
  // Duplicates, as a producer retry would leave them in the log.
  await harness.bus.publish(
    contracts.leadViewRecorded,
    [...views, views[0], views[4]].flatMap((v) => (v ? [v] : [])),
  );
  for (const tenant of [tenantA, tenantB]) {
    const response = await signedGet(
      app.http,
      `/internal/v1/usage/${tenant}/seed?period_start=2026-11-05&day=2026-11-15`,
    );
    expect(response?.json().caught_up).toBe(true);
  }
  await vi.waitFor(async () => expect(await app.tenants.all()).toHaveLength(2), {
    timeout: 5000,
    interval: 50,
  });
});
afterAll(async () => {
  await app.http?.close();
  await app.stop();
  await harness.close();
});

function rebuild(options: { apply?: boolean } = {}) {
  return rebuildLedger({
    pool: harness.pool,
    bus: harness.bus,
    redis: harness.redis,
    now: () => now,
    liveCatchUpTimeoutMs: 5000,
    ...options,
  });
}

const meter = () =>
  createLeadViewMeter(harness.redis, {
    loadUsage: async () => {
      throw new Error("the rebuild must have seeded this counter");
    },
  });

describe("ledger rebuild", () => {
  it("replays leadview.recorded into a shadow ledger equal to the live one and re-seeds Redis", async () => {
    // A drifted meter: Redis thinks tenant A used 400 of 500 this period and read nothing today.
    const periodA = currentPeriod("2026-10-05", now);
    await meter().seed(tenantA, periodA, "2026-11-15", { used: 400, foliosToday: [] }, true);

    const report = await rebuild();
    expect(report).toMatchObject({
      events: 7,
      leadViews: 5,
      duplicates: 2,
      tenants: 2,
      periods: 3,
      liveCaughtUp: true,
      differences: [],
      counterDifferences: [],
      equal: true,
      reseeded: 2,
    });
    expect(formatRebuildReport(report).at(-1)).toMatch(/^EQUAL/);

    // Tenant A's current period (from 2026-11-05) holds A1 (14th), A2 and A3 (today).
    const remaining = await meter().remaining({
      tenantId: tenantA,
      cap: 500,
      period: periodA,
      day: "2026-11-15",
    });
    expect(remaining).toBe(497);
    const again = await meter().reserve({
      tenantId: tenantA,
      cap: 500,
      period: periodA,
      day: "2026-11-15",
      folios: ["A2", "A3", "A9"],
    });
    expect(again).toMatchObject({ ok: true, charged: ["A9"], remaining: 496 });
    const periodB = currentPeriod("2026-09-20", now);
    expect(
      await meter().remaining({ tenantId: tenantB, cap: 2000, period: periodB, day: "2026-11-15" }),
    ).toBe(1999);
  });

  it("proves the same ledger when the shadow rows go in over several COPY connections", async () => {
    const shadow = createShadowLedger(harness.pool);
    const replay = await replayIntoShadow(harness.bus, shadow, { lanes: 3 });
    expect(replay).toMatchObject({ events: 7, leadViews: 5 });
    expect(await shadow.differences(replay.highWaterMarks)).toEqual([]);
    expect(await shadow.summary()).toEqual({ rows: 5, tenants: 2, periods: 3 });
  });

  it("detects a tampered live ledger, exits non-zero and leaves Redis alone", async () => {
    await harness.pool.query("DELETE FROM lead_views WHERE tenant_id = $1 AND folio = 'A2'", [
      tenantA,
    ]);
    await harness.pool.query(
      "UPDATE lead_views SET surface = 'mcp' WHERE tenant_id = $1 AND folio = 'B1'",
      [tenantB],
    );
    const periodA = currentPeriod("2026-10-05", now);
    await meter().seed(tenantA, periodA, "2026-11-15", { used: 123, foliosToday: [] }, true);

    const report = await rebuild();
    expect(report.equal).toBe(false);
    expect(report.differences).toEqual(
      [
        expect.objectContaining({
          tenant_id: tenantA,
          period_start: "2026-11-05",
          live_lead_views: 2,
          shadow_lead_views: 3,
        }),
        expect.objectContaining({ tenant_id: tenantB, period_start: "2026-10-20" }),
      ].sort((left, right) => (left.tenant_id < right.tenant_id ? -1 : 1)),
    );
    // The deleted row also leaves the period counter disagreeing with the rows.
    expect(report.counterDifferences).toEqual([
      { tenant_id: tenantA, period_start: "2026-11-05", counted: 3, rows: 2 },
    ]);
    expect(report.reseeded).toBe(0);
    expect(
      await meter().remaining({ tenantId: tenantA, cap: 500, period: periodA, day: "2026-11-15" }),
    ).toBe(377);

    // The command an operator runs says the same and exits 1.
    const cli = spawn(process.execPath, ["services/quota-ledger/src/main.ts", "rebuild"], {
      env: {
        DATABASE_URL: harness.config.DATABASE_URL,
        REDIS_URL: harness.config.REDIS_URL,
        KAFKA_BROKERS: harness.brokers.join(","),
        REBUILD_LIVE_CATCH_UP_TIMEOUT_MS: "2000",
        LOG_LEVEL: "error",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    cli.stdout.on("data", (chunk) => {
      output += chunk;
    });
    const code = await new Promise<number | null>((resolve) => cli.on("exit", resolve));
    expect(output).toMatch(/MISMATCH/);
    expect(output).toMatch(/NOT EQUAL/);
    expect(output).toMatch(/dry run/);
    expect(output).not.toMatch(/CORRECTED/);
    expect(code).toBe(1);
    // The dry run changed nothing.
    expect(
      (
        await harness.pool.query("SELECT 1 FROM lead_views WHERE tenant_id = $1 AND folio = 'A2'", [
          tenantA,
        ])
      ).rowCount,
    ).toBe(0);
    expect(await usedOf(tenantA)).toBe(3);
  });

  it("with apply swaps the rebuilt ledger in, prints each corrected tenant day, and re-seeds Redis; ledger, counters and usage agree", async () => {
    // Drift of the other kind too: a row the log never had (a view charged for a read that was
    // refused), and a counter that disagrees with the rows.
    await harness.pool.query(
      `INSERT INTO lead_views (tenant_id, day, folio, billing_period_start, surface, request_id,
                               key_id, member_id, recorded_at, source_partition, source_offset)
       SELECT tenant_id, day, 'A-ghost', billing_period_start, surface, 'req_ghost', key_id,
              member_id, recorded_at, source_partition, source_offset
         FROM lead_views WHERE tenant_id = $1 AND folio = 'A3'`,
      [tenantA],
    );
    const periodA = currentPeriod("2026-10-05", now);
    await meter().seed(tenantA, periodA, "2026-11-15", { used: 42, foliosToday: [] }, true);

    const repaired = await rebuild({ apply: true });
    expect(repaired).toMatchObject({ equal: false, applied: true, reseeded: 2 });
    const output = formatRebuildReport(repaired).join("\n");
    // Tenant A, today: A2 was missing and A-ghost had no event (live 2: A3 and the ghost; rebuilt
    // 2: A2 and A3). Tenant B, today: B1's surface was altered (1 row either way).
    expect(output).toContain(`CORRECTED ${tenantA} day 2026-11-15: 2 -> 2 lead-views`);
    expect(output).toContain(`CORRECTED ${tenantB} day 2026-11-15: 1 -> 1 lead-views`);
    expect(repaired.corrected).toHaveLength(2);
    expect(output).toMatch(/REPAIRED/);

    const { rows } = await harness.pool.query<{ folio: string; surface: string }>(
      "SELECT folio, surface FROM lead_views WHERE tenant_id = ANY($1) ORDER BY tenant_id, day, folio",
      [[tenantA, tenantB]],
    );
    expect(rows.map((row) => row.folio).sort()).toEqual(["A1", "A1", "A2", "A3", "B1"]);
    expect(rows.every((row) => row.surface === "rest")).toBe(true);
    // Counters, usage and Redis agree with the repaired rows, and a dry run now finds it equal.
    expect(await usedOf(tenantA)).toBe(3);
    expect(
      await meter().remaining({ tenantId: tenantA, cap: 500, period: periodA, day: "2026-11-15" }),
    ).toBe(497);
    const report = await rebuild();
    expect(report).toMatchObject({ equal: true, differences: [], counterDifferences: [] });
  });
});

/** What the usage endpoint says tenant A (or another) used this period. */
async function usedOf(tenantId: string): Promise<number> {
  const response = await signedGet(app.http, `/internal/v1/usage/${tenantId}`);
  return response?.json().used;
}
