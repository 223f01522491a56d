// leadview.voided in the ledger (docs/decisions/0190-lead-view-voided.md): a void taken after or
// before the recorded events it names leaves their views uncharged, a void of views never
// recorded leaves nothing, a void applied twice changes nothing, another request's event of the
// same view is charged in the voided one's place, and the rebuild's replay agrees with all of it.
import { contracts, type LeadViewRecorded, type LeadViewVoided } from "@th/contracts";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { freshTenant, leadView, signedGet, tenantChange } from "../testing/fixtures.ts";
import { rebuildLedger } from "./rebuild.ts";

let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;
const now = new Date("2026-11-20T12:00:00Z");
const PERIOD = "2026-11-05";
const DAY = "2026-11-20";

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [migrations],
    topics: [contracts.leadViewRecorded, contracts.leadViewVoided, contracts.tenantChanged],
  });
  app = await buildApp(harness, { now: () => now });
  await app.start();
});
afterAll(async () => {
  await app.http?.close();
  await app.stop();
  await harness.close();
});

const view = (tenant: string, folio: string, requestId: string): LeadViewRecorded => ({
  ...leadView(tenant, folio, `${DAY}T10:00:00.000Z`, PERIOD),
  request_id: requestId,
});

const voidOf = (tenant: string, requestId: string, folios: string[]): LeadViewVoided => ({
  tenant_id: tenant,
  request_id: requestId,
  day: DAY,
  folios,
  reason: "publish_timeout",
  voided_at: `${DAY}T10:00:02.000Z`,
});

/** The usage figures once the ledger has read the tenant's recorded events. */
async function usage(tenant: string) {
  const response = await signedGet(
    app.http,
    `/internal/v1/usage/${tenant}/seed?period_start=${PERIOD}&day=${DAY}`,
  );
  const body = response?.json() as { used: number; folios_today: string[]; caught_up: boolean };
  expect(body.caught_up).toBe(true);
  return { used: body.used, folios: body.folios_today };
}

async function rows(tenant: string) {
  const { rows } = await harness.pool.query<{ folio: string; request_id: string }>(
    "SELECT folio, request_id FROM lead_views WHERE tenant_id = $1 ORDER BY folio",
    [tenant],
  );
  return rows;
}

async function voidsApplied(tenant: string, count: number) {
  await vi.waitFor(
    async () => {
      const { rows } = await harness.pool.query(
        "SELECT 1 FROM lead_view_voids WHERE tenant_id = $1",
        [tenant],
      );
      expect(rows.length).toBe(count);
    },
    { timeout: 10_000, interval: 50 },
  );
}

describe("a voided read in the ledger (leadview.voided)", () => {
  it("takes back the charge of a view recorded before the void", async () => {
    const tenant = freshTenant("void_after");
    await harness.bus.publish(contracts.leadViewRecorded, [
      view(tenant, "F1", "req_kept"),
      view(tenant, "F2", "req_void"),
      view(tenant, "F3", "req_void"),
    ]);
    expect(await usage(tenant)).toEqual({ used: 3, folios: ["F1", "F2", "F3"] });
    await harness.bus.publish(contracts.leadViewVoided, voidOf(tenant, "req_void", ["F2", "F3"]));
    await vi.waitFor(async () => expect(await usage(tenant)).toEqual({ used: 1, folios: ["F1"] }), {
      timeout: 10_000,
      interval: 50,
    });
    // Delivered again (at-least-once): nothing more changes.
    await harness.bus.publish(contracts.leadViewVoided, voidOf(tenant, "req_void", ["F2", "F3"]));
    await harness.bus.publish(contracts.leadViewRecorded, view(tenant, "F2", "req_void"));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await usage(tenant)).toEqual({ used: 1, folios: ["F1"] });
  });

  it("never charges a view whose void was read before it", async () => {
    const tenant = freshTenant("void_before");
    await harness.bus.publish(contracts.leadViewVoided, voidOf(tenant, "req_void", ["F1"]));
    await voidsApplied(tenant, 1);
    await harness.bus.publish(contracts.leadViewRecorded, view(tenant, "F1", "req_void"));
    expect(await usage(tenant)).toEqual({ used: 0, folios: [] });
    // A later read of the same folio is another request, and is charged.
    await harness.bus.publish(contracts.leadViewRecorded, view(tenant, "F1", "req_later"));
    expect(await usage(tenant)).toEqual({ used: 1, folios: ["F1"] });
    expect(await rows(tenant)).toEqual([{ folio: "F1", request_id: "req_later" }]);
  });

  it("leaves nothing for a void of views never recorded", async () => {
    const tenant = freshTenant("void_never");
    await harness.bus.publish(contracts.leadViewRecorded, view(tenant, "F1", "req_kept"));
    await harness.bus.publish(contracts.leadViewVoided, voidOf(tenant, "req_gone", ["F9"]));
    await voidsApplied(tenant, 1);
    expect(await usage(tenant)).toEqual({ used: 1, folios: ["F1"] });
    expect(await rows(tenant)).toEqual([{ folio: "F1", request_id: "req_kept" }]);
  });

  it("charges another request's event of the same view in place of the voided one", async () => {
    const tenant = freshTenant("void_runner_up");
    // req_a was charged first; req_b read the folio while req_a's view was unsettled.
    await harness.bus.publish(contracts.leadViewRecorded, [
      view(tenant, "F1", "req_a"),
      view(tenant, "F1", "req_b"),
      view(tenant, "F2", "req_a"),
      view(tenant, "F2", "req_c"),
    ]);
    expect(await usage(tenant)).toEqual({ used: 2, folios: ["F1", "F2"] });
    await harness.bus.publish(contracts.leadViewVoided, [
      voidOf(tenant, "req_a", ["F1"]),
      voidOf(tenant, "req_c", ["F2"]),
    ]);
    await voidsApplied(tenant, 2);
    expect(await usage(tenant)).toEqual({ used: 2, folios: ["F1", "F2"] });
    expect(await rows(tenant)).toEqual([
      { folio: "F1", request_id: "req_b" },
      { folio: "F2", request_id: "req_a" },
    ]);
    await harness.bus.publish(contracts.leadViewVoided, voidOf(tenant, "req_b", ["F1"]));
    await vi.waitFor(async () => expect((await usage(tenant)).used).toBe(1), {
      timeout: 10_000,
      interval: 50,
    });
    expect(await rows(tenant)).toEqual([{ folio: "F2", request_id: "req_a" }]);
  });

  it("is replayed by the ledger rebuild, which finds the live ledger equal to the log", async () => {
    const tenant = freshTenant("void_rebuild");
    await harness.bus.publish(contracts.tenantChanged, tenantChange(tenant, 1, "team", 50, PERIOD));
    await harness.bus.publish(contracts.leadViewRecorded, [
      view(tenant, "F1", "req_void"),
      view(tenant, "F2", "req_kept"),
    ]);
    await harness.bus.publish(contracts.leadViewVoided, voidOf(tenant, "req_void", ["F1"]));
    await vi.waitFor(async () => expect((await usage(tenant)).used).toBe(1), {
      timeout: 10_000,
      interval: 50,
    });
    await vi.waitFor(async () => expect(await app.tenants.all()).not.toHaveLength(0), {
      timeout: 5_000,
    });
    const report = await rebuildLedger({
      pool: harness.pool,
      bus: harness.bus,
      redis: harness.redis,
      now: () => now,
      liveCatchUpTimeoutMs: 5_000,
    });
    expect(report.differences).toEqual([]);
    expect(report.counterDifferences).toEqual([]);
    expect(report.equal).toBe(true);
    expect(report.voided).toBeGreaterThanOrEqual(1);
  });
});
