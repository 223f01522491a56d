import { contracts } from "@th/contracts";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { freshTenant, leadView, signedGet, tenantChange } from "../testing/fixtures.ts";

let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [migrations],
    topics: [contracts.leadViewRecorded, contracts.leadViewVoided, contracts.tenantChanged],
  });
  app = await buildApp(harness);
  await app.start();
});
afterAll(async () => {
  await app.http?.close();
  await app.stop();
  await harness.close();
});

/** Asks the seed route, which answers only once the ledger has read the tenant's partition. */
async function seed(tenantId: string, periodStart: string, day: string) {
  const response = await signedGet(
    app.http,
    `/internal/v1/usage/${tenantId}/seed?period_start=${periodStart}&day=${day}`,
  );
  expect(response?.statusCode).toBe(200);
  return response?.json() as { used: number; folios_today: string[]; caught_up: boolean };
}

async function ledgerRows(tenantId: string) {
  const { rows } = await harness.pool.query(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, folio, request_id FROM lead_views
     WHERE tenant_id = $1 ORDER BY day, folio`,
    [tenantId],
  );
  return rows;
}

describe("lead-view ledger (spec: Lead-view (quota unit))", () => {
  it("keeps one row per (tenant, folio, UTC day) when the same event is delivered twice", async () => {
    const tenant = freshTenant("redelivery");
    const view = leadView(tenant, "0112345", "2026-11-20T10:00:00.000Z", "2026-11-05");
    await harness.bus.publish(contracts.leadViewRecorded, view);
    await harness.bus.publish(contracts.leadViewRecorded, view);
    // A second read of the same parcel the same day, from another request, is not a new view.
    await harness.bus.publish(contracts.leadViewRecorded, {
      ...view,
      request_id: "req_later",
      recorded_at: "2026-11-20T18:00:00.000Z",
    });

    const figures = await seed(tenant, "2026-11-05", "2026-11-20");
    expect(figures).toEqual({ used: 1, folios_today: ["0112345"], caught_up: true });
    const rows = await ledgerRows(tenant);
    expect(rows).toEqual([{ day: "2026-11-20", folio: "0112345", request_id: view.request_id }]);
  });

  it("counts a batch holding one lead-view twice once, keeps its first event, and ignores the batch when it comes again", async () => {
    const tenant = freshTenant("batch");
    const first = leadView(tenant, "0221100", "2026-11-20T09:00:00.000Z", "2026-11-05");
    const again = { ...first, request_id: "req_again", recorded_at: "2026-11-20T09:30:00.000Z" };
    const other = leadView(tenant, "0221101", "2026-11-20T09:45:00.000Z", "2026-11-05");
    // One request, one tenant's partition: fetched and recorded as one batch.
    await harness.bus.publish(contracts.leadViewRecorded, [first, again, other]);
    expect(await seed(tenant, "2026-11-05", "2026-11-20")).toEqual({
      used: 2,
      folios_today: ["0221100", "0221101"],
      caught_up: true,
    });
    // The same batch once more, as a redelivery after a crash before its commit would hand it.
    const partition = await harness.bus.partitionFor(contracts.leadViewRecorded.topic, tenant);
    await app.ledger.recordBatch(
      [first, again, other].map((view, offset) => ({
        view,
        position: { partition, offset: String(offset) },
      })),
    );
    expect((await seed(tenant, "2026-11-05", "2026-11-20")).used).toBe(2);
    expect((await ledgerRows(tenant)).map((row) => row.request_id)).toEqual([
      first.request_id,
      other.request_id,
    ]);
  });

  it("counts reads at 23:59:59 and 00:00:01 UTC as two lead-views (the UTC calendar day)", async () => {
    const tenant = freshTenant("midnight");
    await harness.bus.publish(contracts.leadViewRecorded, [
      leadView(tenant, "0998877", "2026-11-20T23:59:59.000Z", "2026-11-05"),
      leadView(tenant, "0998877", "2026-11-21T00:00:01.000Z", "2026-11-05"),
    ]);
    const nextDay = await seed(tenant, "2026-11-05", "2026-11-21");
    expect(nextDay).toEqual({ used: 2, folios_today: ["0998877"], caught_up: true });
    expect((await ledgerRows(tenant)).map((row) => row.day)).toEqual(["2026-11-20", "2026-11-21"]);
  });

  it("counts each billing period apart, as the event's period names it", async () => {
    const tenant = freshTenant("periods");
    await harness.bus.publish(contracts.leadViewRecorded, [
      leadView(tenant, "A", "2026-11-04T12:00:00.000Z", "2026-10-05"),
      leadView(tenant, "A", "2026-11-05T00:00:00.000Z", "2026-11-05"),
      leadView(tenant, "B", "2026-11-05T01:00:00.000Z", "2026-11-05"),
    ]);
    expect((await seed(tenant, "2026-11-05", "2026-11-05")).used).toBe(2);
    expect((await seed(tenant, "2026-10-05", "2026-11-04")).used).toBe(1);
  });

  it("keeps the highest tenant.changed revision whatever order they arrive in", async () => {
    const tenant = freshTenant("revisions");
    await harness.bus.publish(contracts.tenantChanged, [
      tenantChange(tenant, 3, "team", 5000, "2026-10-05"),
      tenantChange(tenant, 2, "operator", 2000, "2026-10-05"),
    ]);
    await vi.waitFor(
      async () => {
        expect(await app.tenants.find(tenant)).toMatchObject({
          tier: "team",
          leadViewsPerMonth: 5000,
          billingAnniversary: "2026-10-05",
        });
      },
      { timeout: 5000, interval: 50 },
    );
    await harness.bus.publish(
      contracts.tenantChanged,
      tenantChange(tenant, 4, "custom", 12_000, "2026-10-05"),
    );
    await vi.waitFor(
      async () => expect((await app.tenants.find(tenant))?.leadViewsPerMonth).toBe(12_000),
      { timeout: 5000, interval: 50 },
    );
  });
});
