import { contracts } from "@th/contracts";
import { createMetrics } from "@th/service-kit";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { freshTenant, leadView, tenantChange } from "../testing/fixtures.ts";
import { migrations } from "./migrations.ts";

let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;
const metrics = createMetrics("quota-ledger");
const clock = new Date("2026-11-15T12:00:00Z");

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [migrations],
    topics: [contracts.leadViewRecorded, contracts.leadViewVoided, contracts.tenantChanged],
  });
  app = await buildApp({ ...harness, metrics }, { now: () => clock });
  await app.start();
});
afterAll(async () => {
  await app.http?.close();
  await app.stop();
  await harness.close();
});

async function gauges() {
  const text = await metrics.registry.metrics();
  const value = (name: string) =>
    Number(text.match(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, "m"))?.[1]);
  return {
    tenants: value("th_quota_counter_drift_tenants"),
    leadViews: value("th_quota_counter_drift_lead_views"),
  };
}

describe("ledger and Redis counter drift gauges", () => {
  it("count the tenants, and the lead-views, by which Redis disagrees with the ledger; an unseeded counter is no drift", async () => {
    const agreeing = freshTenant("agree");
    const ahead = freshTenant("ahead");
    const behind = freshTenant("behind");
    const unseeded = freshTenant("unseeded");
    await harness.bus.publish(
      contracts.tenantChanged,
      [agreeing, ahead, behind, unseeded].map((tenant) =>
        tenantChange(tenant, 1, "team", 5000, "2026-11-05"),
      ),
    );
    await harness.bus.publish(
      contracts.leadViewRecorded,
      [agreeing, ahead, behind, unseeded].flatMap((tenant) =>
        ["A", "B", "C"].map((folio) =>
          leadView(tenant, folio, "2026-11-15T09:00:00.000Z", "2026-11-05"),
        ),
      ),
    );
    await vi.waitFor(
      async () => {
        const { rows } = await harness.db
          .poolFor("quota_ledger")
          .query<{ n: number }>("SELECT count(*)::int AS n FROM period_usage WHERE lead_views = 3");
        expect(rows[0]?.n).toBeGreaterThanOrEqual(4);
      },
      { timeout: 10_000, interval: 50 },
    );
    const counter = (tenant: string) => `th:lv:used:${tenant}:2026-11-05`;
    await harness.redis.set(counter(agreeing), "3");
    await harness.redis.set(counter(ahead), "5");
    await harness.redis.set(counter(behind), "1");
    expect(await gauges()).toEqual({ tenants: 2, leadViews: 4 });

    await harness.redis.set(counter(ahead), "3");
    await harness.redis.set(counter(behind), "3");
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(await gauges()).toEqual({ tenants: 0, leadViews: 0 });
  });
});
