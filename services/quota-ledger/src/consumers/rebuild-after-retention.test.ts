// The rebuild after the ledger's own retention dropped a month the log still holds (decision
// 0393): it compares only the days the ledger keeps, leaves alone the counters of periods that
// began before them, and a repair never brings a dropped month back.
import { contracts } from "@th/contracts";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { freshTenant, leadView, tenantChange } from "../testing/fixtures.ts";
import { rebuildLedger } from "./rebuild.ts";

// 400 days before T is 2029-06-01T12:00Z: retention drops May 2029 and keeps June on.
const T = new Date("2030-07-06T12:00:00Z");
const tenant = freshTenant("rebuilt");
let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({ RETENTION_INTERVAL_MS: "3600000" }),
    migrations: [migrations],
    topics: [contracts.leadViewRecorded, contracts.leadViewVoided, contracts.tenantChanged],
  });
  app = await buildApp(harness, { now: () => T });
  await app.start();
});
afterAll(async () => {
  await app.stop();
  await harness.close();
});

async function rows() {
  const { rows } = await harness.pool.query<{ day: string; folio: string }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, folio FROM lead_views WHERE tenant_id = $1
      ORDER BY day`,
    [tenant],
  );
  return rows;
}

async function counters() {
  const { rows } = await harness.pool.query(
    `SELECT to_char(period_start, 'YYYY-MM-DD') AS period_start, lead_views FROM period_usage
      WHERE tenant_id = $1 ORDER BY period_start`,
    [tenant],
  );
  return rows;
}

const rebuild = (apply: boolean) =>
  rebuildLedger({
    pool: harness.pool,
    bus: harness.bus,
    redis: harness.redis,
    now: () => T,
    liveCatchUpTimeoutMs: 10_000,
    apply,
  });

describe("the ledger rebuild after retention dropped a month the log still holds", () => {
  it("proves the kept days equal, keeps the counters of earlier periods, and repairs without bringing the month back", async () => {
    await harness.bus.publish(contracts.tenantChanged, [
      tenantChange(tenant, 1, "starter", 500, "2029-05-20"),
    ]);
    await harness.bus.publish(contracts.leadViewRecorded, [
      // A period that began in the dropped month and ends in a kept one.
      leadView(tenant, "MAY", "2029-05-25T10:00:00.000Z", "2029-05-20"),
      leadView(tenant, "JUNE", "2029-06-05T10:00:00.000Z", "2029-05-20"),
      leadView(tenant, "NOW1", "2030-06-25T10:00:00.000Z", "2030-06-20"),
      leadView(tenant, "NOW2", "2030-07-06T10:00:00.000Z", "2030-06-20"),
    ]);
    await vi.waitFor(async () => expect(await rows()).toHaveLength(4), {
      timeout: 10_000,
      interval: 100,
    });
    await app.retention.runOnce();
    expect((await rows()).map((row) => row.folio)).toEqual(["JUNE", "NOW1", "NOW2"]);
    const billed = [
      { period_start: "2029-05-20", lead_views: 2 },
      { period_start: "2030-06-20", lead_views: 2 },
    ];
    expect(await counters()).toEqual(billed);

    const checked = await rebuild(false);
    expect(checked.events).toBe(4);
    expect(checked).toMatchObject({ differences: [], counterDifferences: [], equal: true });

    // A lost row of a kept day: the repair puts it back and nothing of May.
    await harness.pool.query("DELETE FROM lead_views WHERE tenant_id = $1 AND folio = 'NOW2'", [
      tenant,
    ]);
    const repaired = await rebuild(true);
    expect(repaired.equal).toBe(false);
    expect(repaired.applied).toBe(true);
    expect(repaired.corrected).toEqual([
      { tenant_id: tenant, day: "2030-07-06", live_lead_views: 0, rebuilt_lead_views: 1 },
    ]);
    expect((await rows()).map((row) => row.folio)).toEqual(["JUNE", "NOW1", "NOW2"]);
    expect(await counters()).toEqual(billed);
    expect((await rebuild(false)).equal).toBe(true);
  });
});
