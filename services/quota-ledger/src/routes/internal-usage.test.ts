import { contracts } from "@th/contracts";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import { freshTenant, leadView, signedGet, tenantChange } from "../testing/fixtures.ts";

let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;
const clock = new Date("2026-11-15T12:00:00Z");

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [migrations],
    topics: [contracts.leadViewRecorded, contracts.leadViewVoided, contracts.tenantChanged],
  });
  app = await buildApp(harness, { now: () => clock });
  await app.start();
});
afterAll(async () => {
  await app.http?.close();
  await app.stop();
  await harness.close();
});

async function get(url: string) {
  return signedGet(app.http, url);
}

async function getUnsigned(url: string, headers: Record<string, string> = {}) {
  const response = await app.http?.inject({ method: "GET", url, headers });
  if (!response) {
    throw new Error("no http app");
  }
  return response;
}

async function tenantKnown(tenantId: string, cap: number) {
  await vi.waitFor(
    async () => expect((await app.tenants.find(tenantId))?.leadViewsPerMonth).toBe(cap),
    { timeout: 5000, interval: 50 },
  );
}

describe("GET /internal/v1/usage/:tenant_id/seed", () => {
  it("waits until the ledger has read views produced just before the question", async () => {
    const tenant = freshTenant("seed");
    const folios = Array.from({ length: 40 }, (_, index) => `F${String(index).padStart(3, "0")}`);
    await harness.bus.publish(
      contracts.leadViewRecorded,
      folios.map((folio) => leadView(tenant, folio, "2026-11-15T09:00:00.000Z", "2026-11-05")),
    );
    await harness.bus.publish(
      contracts.leadViewRecorded,
      leadView(tenant, "YESTERDAY", "2026-11-14T09:00:00.000Z", "2026-11-05"),
    );
    // Asked at once: the answer must already include every view just recorded.
    const response = await get(
      `/internal/v1/usage/${tenant}/seed?period_start=2026-11-05&day=2026-11-15`,
    );
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ used: 41, folios_today: folios, caught_up: true });
  });

  it("says caught_up false when the ledger cannot reach the tenant's partition in time", async () => {
    const tenant = freshTenant("stalled");
    await harness.bus.publish(
      contracts.leadViewRecorded,
      leadView(tenant, "X1", "2026-11-15T09:00:00.000Z", "2026-11-05"),
    );
    // A second instance whose consumer never started stands in for a stalled ledger.
    const stalled = await buildApp({
      ...harness,
      config: { ...harness.config, SEED_CATCH_UP_TIMEOUT_MS: 200 },
    });
    const response = await signedGet(
      stalled.http,
      `/internal/v1/usage/${tenant}/seed?period_start=2026-11-05&day=2026-11-15`,
    );
    expect(response?.json()).toMatchObject({ caught_up: false });
    await stalled.http?.close();
  });

  it("refuses calls that no accepted caller signed", async () => {
    const url = "/internal/v1/usage/ten_x/seed?period_start=2026-11-05&day=2026-11-15";
    const missing = await getUnsigned(url);
    expect(missing.statusCode).toBe(401);
    expect(missing.json()).toMatchObject({ error: "unauthorized" });
    const wrong = await getUnsigned(url, { "x-th-internal-token": "a-shared-token-of-old" });
    expect(wrong.statusCode).toBe(401);
    expect((await getUnsigned("/internal/v1/usage/ten_x")).statusCode).toBe(401);
  });

  it("answers 400 naming each bad query field", async () => {
    const response = await get("/internal/v1/usage/ten_x/seed?period_start=2026-02-30&day=today");
    expect(response.statusCode).toBe(400);
    const body = response.json();
    expect(body.error).toBe("invalid_request");
    expect(body.fields.map((field: { path: string }) => field.path).sort()).toEqual([
      "querystring.day",
      "querystring.period_start",
    ]);
    const missing = await get("/internal/v1/usage/ten_x/seed");
    expect(missing.statusCode).toBe(400);
    const badAt = await get("/internal/v1/usage/ten_x?at=yesterday");
    expect(badAt.statusCode).toBe(400);
    expect(badAt.json().fields).toEqual([expect.objectContaining({ path: "querystring.at" })]);
  });
});

describe("GET /internal/v1/usage/:tenant_id (spec: Per-tier caps, billing-anniversary reset)", () => {
  it("reports the current billing period, its cap from tenant.changed, and daily lead-views", async () => {
    const tenant = freshTenant("usage");
    // Anniversary on the 31st: the period that starts 2026-10-31 ends on November's last day.
    await harness.bus.publish(
      contracts.tenantChanged,
      tenantChange(tenant, 1, "operator", 2000, "2026-08-31"),
    );
    await harness.bus.publish(contracts.leadViewRecorded, [
      leadView(tenant, "OLD", "2026-10-30T23:59:59.000Z", "2026-09-30"),
      leadView(tenant, "A", "2026-10-31T00:00:00.000Z", "2026-10-31"),
      leadView(tenant, "B", "2026-11-02T08:00:00.000Z", "2026-10-31"),
      leadView(tenant, "C", "2026-11-02T09:00:00.000Z", "2026-10-31"),
    ]);
    await tenantKnown(tenant, 2000);
    await get(`/internal/v1/usage/${tenant}/seed?period_start=2026-10-31&day=2026-11-02`);

    const current = await get(`/internal/v1/usage/${tenant}`);
    expect(current.statusCode).toBe(200);
    expect(current.json()).toEqual({
      tenant_id: tenant,
      period_start: "2026-10-31T00:00:00.000Z",
      period_end: "2026-11-30T00:00:00.000Z",
      cap: 2000,
      used: 3,
      daily: [
        { day: "2026-10-31", lead_views: 1 },
        { day: "2026-11-02", lead_views: 2 },
      ],
    });

    const previous = await get(`/internal/v1/usage/${tenant}?at=2026-10-30T23:59:59Z`);
    expect(previous.json()).toMatchObject({
      period_start: "2026-09-30T00:00:00.000Z",
      period_end: "2026-10-31T00:00:00.000Z",
      used: 1,
    });

    // An upgrade raises the cap of the same period.
    await harness.bus.publish(
      contracts.tenantChanged,
      tenantChange(tenant, 2, "team", 5000, "2026-08-31"),
    );
    await tenantKnown(tenant, 5000);
    expect((await get(`/internal/v1/usage/${tenant}`)).json()).toMatchObject({
      cap: 5000,
      used: 3,
    });
  });

  it("answers 404 for a tenant the ledger has never heard of", async () => {
    const response = await get(`/internal/v1/usage/${freshTenant("unknown")}`);
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ error: "not_found" });
  });
});
