// The ledger's retention (decision 0393): lead-views kept at least 400 days and dropped a month
// at a time, voids and runners-up kept through the void window; what a tenant is billed on never
// moves, and a void arriving inside the window still does all it did before retention ran.
import { contracts, type LeadViewRecorded, type LeadViewVoided, utcDayOf } from "@th/contracts";
import { createMetrics, listPartitions } from "@th/service-kit";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { leadViewExpiry, monthStart } from "../domain/retention.ts";
import { freshTenant, leadView, signedGet, tenantChange } from "../testing/fixtures.ts";
import { migrations } from "./migrations.ts";
import { leadViewsRule } from "./retention.ts";

const DAY_MS = 86_400_000;
// The tests run in order on one clock that, like the horizon, only moves forward.
// 400 days before T is 2029-06-01T12:00Z: the horizon is 2029-06-01.
const T = new Date("2030-07-06T12:00:00Z");
let clock = T;
let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;
const metrics = createMetrics("quota-ledger");

beforeAll(async () => {
  harness = await createTestHarness({
    // Rounds run when a test asks, never on their own in the middle of one.
    config: readConfig({ RETENTION_INTERVAL_MS: "3600000" }),
    migrations: [migrations],
    topics: [contracts.leadViewRecorded, contracts.leadViewVoided, contracts.tenantChanged],
  });
  app = await buildApp({ ...harness, metrics }, { now: () => clock });
});
afterAll(async () => {
  await app.http?.close();
  await harness.close();
});

let offset = 0;
async function record(tenant: string, day: string, folio: string, requestId: string) {
  const view: LeadViewRecorded = {
    ...leadView(tenant, folio, `${day}T10:00:00.000Z`, day),
    request_id: requestId,
  };
  await app.ledger.recordBatch([{ view, position: { partition: 0, offset: String(offset++) } }]);
}

function voidOf(tenant: string, day: string, requestId: string, folios: string[]): LeadViewVoided {
  return {
    tenant_id: tenant,
    request_id: requestId,
    day,
    folios,
    reason: "publish_timeout",
    voided_at: `${day}T10:00:02.000Z`,
  };
}

async function retentionAt(at: Date) {
  clock = at;
  return app.retention.runOnce();
}

async function rowsOf(table: string, tenant: string) {
  const { rows } = await harness.pool.query<{ day: string; folio: string; request_id: string }>(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, folio, request_id FROM ${table}
      WHERE tenant_id = $1 ORDER BY day, folio, request_id`,
    [tenant],
  );
  return rows;
}

async function partitionOf(tenant: string, folio: string): Promise<string | undefined> {
  const { rows } = await harness.pool.query<{ name: string }>(
    "SELECT tableoid::regclass::text AS name FROM lead_views WHERE tenant_id = $1 AND folio = $2",
    [tenant, folio],
  );
  return rows[0]?.name;
}

async function relationExists(name: string): Promise<boolean> {
  const { rows } = await harness.pool.query<{ found: string | null }>(
    "SELECT to_regclass($1)::text AS found",
    [name],
  );
  return rows[0]?.found !== null;
}

async function periodCounters(tenant: string) {
  const { rows } = await harness.pool.query(
    `SELECT to_char(period_start, 'YYYY-MM-DD') AS period_start, lead_views FROM period_usage
      WHERE tenant_id = $1 ORDER BY period_start`,
    [tenant],
  );
  return rows;
}

const daysBefore = (at: Date, days: number) => utcDayOf(new Date(at.getTime() - days * DAY_MS));

describe("lead-views are kept 400 days and dropped a month at a time (decision 0393)", () => {
  it("deletes the expired rows of the partition made from the table as it was, a batch at a time across its tenants, and drops it once all of it has expired", async () => {
    const first = (await listPartitions(harness.pool, "lead_views")).find((p) => p.from === null);
    const end = first?.to as Date;
    const lastMonth = monthStart(end, -1);
    const dayBefore = (days: number) => utcDayOf(new Date(lastMonth.getTime() - days * DAY_MS));
    // Three tenants with expired views (the last the day before the horizon) and one on its
    // first day, and a tenant between them with none expired: a batch spans tenants and skips it.
    const tenants = ["first_a", "first_b", "first_c"].map((label) => freshTenant(label));
    for (const tenant of tenants) {
      for (const [i, day] of [dayBefore(40), dayBefore(20), dayBefore(1)].entries()) {
        await record(tenant, day, `GONE${i}`, "req");
      }
      await record(tenant, utcDayOf(lastMonth), "STAYS", "req");
    }
    const young = freshTenant("first_b_young");
    await record(young, utcDayOf(new Date(lastMonth.getTime() + 5 * DAY_MS)), "STAYS", "req");

    // The horizon reaches the first partition's last month: what lies before it goes, at most a
    // batch a statement.
    const at = new Date(lastMonth.getTime() + 400.5 * DAY_MS);
    const rule = leadViewsRule(400);
    const batches = [];
    for (let batch = 0; batch < 4; batch++) {
      batches.push(await rule.sweep(harness.pool, at, 4));
    }
    expect(batches).toEqual([4, 4, 1, 0]);
    for (const tenant of [...tenants, young]) {
      expect((await rowsOf("lead_views", tenant)).map((row) => row.folio)).toEqual(["STAYS"]);
    }
    expect(await relationExists(first?.name as string)).toBe(true);

    // Once its last month has expired too, the partition is dropped whole.
    await retentionAt(new Date(end.getTime() + 400.5 * DAY_MS));
    for (const tenant of [...tenants, young]) {
      expect(await rowsOf("lead_views", tenant)).toEqual([]);
    }
    expect(await relationExists(first?.name as string)).toBe(false);
    expect(await rule.sweep(harness.pool, new Date(end.getTime() + 400.5 * DAY_MS), 4)).toBe(0);
  });

  it("keeps a lead-view 399 days old and removes one 401 days old, dropping its month whole", async () => {
    const tenant = freshTenant("horizon");
    expect(daysBefore(T, 401)).toBe("2029-05-31");
    await record(tenant, daysBefore(T, 401), "OLD", "req_old");
    await record(tenant, daysBefore(T, 399), "KEPT", "req_kept");
    await record(tenant, "2029-06-01", "FIRST", "req_first");
    const oldPartition = await partitionOf(tenant, "OLD");
    expect(oldPartition).toMatch(/lead_views_p202905$/);

    await retentionAt(T);

    expect((await rowsOf("lead_views", tenant)).map((row) => row.folio)).toEqual(["FIRST", "KEPT"]);
    expect(await relationExists(oldPartition as string)).toBe(false);
    expect(await partitionOf(tenant, "KEPT")).toMatch(/lead_views_p202906$/);
  });

  it("keeps a lead-view past 400 days while its month still holds younger ones, then drops the month", async () => {
    const tenant = freshTenant("month");
    await record(tenant, "2029-06-15", "MID", "req_mid");
    await record(tenant, "2029-06-30", "LAST", "req_last");
    // 2029-06-15 is 401 days old; 2029-06-30 is not 400 yet.
    await retentionAt(new Date("2030-07-20T12:00:00Z"));
    expect(await rowsOf("lead_views", tenant)).toHaveLength(2);

    await retentionAt(leadViewExpiry("2029-06-30", 400));
    expect(await rowsOf("lead_views", tenant)).toEqual([]);
    expect(await relationExists("lead_views_p202906")).toBe(false);
  });

  it("does not record again an event of a month retention dropped, and makes a partition for a month that has none", async () => {
    const tenant = freshTenant("replayed");
    await retentionAt(T);
    await record(tenant, "2029-05-20", "EXPIRED", "req_expired");
    expect(await rowsOf("lead_views", tenant)).toEqual([]);
    expect(await periodCounters(tenant)).toEqual([]);

    expect(await relationExists("lead_views_p203301")).toBe(false);
    await record(tenant, "2033-01-10", "AHEAD", "req_ahead");
    expect(await partitionOf(tenant, "AHEAD")).toMatch(/lead_views_p203301$/);
    expect(await periodCounters(tenant)).toEqual([{ period_start: "2033-01-10", lead_views: 1 }]);
  });

  it("never changes the usage a tenant is billed on, nor any period's counter", async () => {
    const tenant = freshTenant("billed");
    // 400 days before it is 2029-09-01T12:00Z: retention then drops August 2029.
    const at = new Date("2030-10-06T12:00:00Z");
    await app.tenants.apply(tenantChange(tenant, 1, "starter", 500, "2029-07-20"));
    const views = [
      ["2029-08-10", "O1", "2029-07-20"],
      ["2029-08-19", "O2", "2029-07-20"],
      ["2030-09-20", "C1", "2030-09-20"],
      ["2030-09-30", "C2", "2030-09-20"],
      ["2030-10-06", "C3", "2030-09-20"],
    ] as const;
    for (const [day, folio, periodStart] of views) {
      const view = leadView(tenant, folio, `${day}T10:00:00.000Z`, periodStart);
      await app.ledger.recordBatch([
        { view, position: { partition: 0, offset: String(offset++) } },
      ]);
    }
    clock = at;
    const usage = () => signedGet(app.http, `/internal/v1/usage/${tenant}`);
    const seed = () =>
      signedGet(
        app.http,
        `/internal/v1/usage/${tenant}/seed?period_start=2030-09-20&day=2030-10-06`,
      );
    const before = {
      usage: (await usage()).json(),
      seed: (await seed()).json(),
      counters: await periodCounters(tenant),
    };
    expect(before.usage).toMatchObject({ used: 3 });
    expect(before.seed).toMatchObject({ used: 3, folios_today: ["C3"] });
    expect(before.counters).toEqual([
      { period_start: "2029-07-20", lead_views: 2 },
      { period_start: "2030-09-20", lead_views: 3 },
    ]);

    await retentionAt(at);

    expect(await rowsOf("lead_views", tenant)).toHaveLength(3);
    expect({
      usage: (await usage()).json(),
      seed: (await seed()).json(),
      counters: await periodCounters(tenant),
    }).toEqual(before);
  });

  it("exports per table the rows it removed, the oldest row's age and how far behind it is", async () => {
    const tenant = freshTenant("metrics");
    await record(tenant, "2030-07-01", "NEW", "req_new");
    await retentionAt(T);
    const text = await metrics.registry.metrics();
    for (const table of ["lead_views", "lead_view_runners_up", "lead_view_voids"]) {
      expect(text).toContain(`th_retention_removed_rows_total{table="quota_ledger.${table}"`);
      expect(text).toContain(`th_retention_behind_seconds{table="quota_ledger.${table}"`);
      expect(text).toContain(`th_table_bytes{table="quota_ledger.${table}"`);
    }
    // Everything older than the horizon is gone: the oldest row is the horizon's month at most.
    const age = Number(
      /th_table_oldest_row_age_seconds\{table="quota_ledger\.lead_views"[^}]*\} (\S+)/.exec(
        text,
      )?.[1],
    );
    expect(age).toBeGreaterThan(0);
    expect(age).toBeLessThanOrEqual((T.getTime() - Date.parse("2029-06-01T00:00:00Z")) / 1000);
    expect(text).toMatch(/th_retention_behind_seconds\{table="quota_ledger\.lead_views"[^}]*\} 0/);
  });
});

describe("voids and runners-up are kept while a void can still arrive (decision 0393)", () => {
  it("applies a void arriving inside the window after retention ran: the runner-up is charged, a voided read stays uncharged", async () => {
    const tenant = freshTenant("window");
    const day = daysBefore(T, 2);
    const oldDay = daysBefore(T, 9);
    await record(tenant, day, "F1", "req_a");
    await record(tenant, day, "F1", "req_b");
    await app.ledger.voidBatch([voidOf(tenant, day, "req_c", ["F2"])]);
    // The same on a day whose window has closed.
    await record(tenant, oldDay, "F1", "req_a");
    await record(tenant, oldDay, "F1", "req_b");
    await app.ledger.voidBatch([voidOf(tenant, oldDay, "req_c", ["F2"])]);

    const removed = await retentionAt(T);
    expect(removed.get("quota_ledger.lead_view_runners_up")).toBeGreaterThanOrEqual(1);
    expect(await rowsOf("lead_view_runners_up", tenant)).toEqual([
      { day, folio: "F1", request_id: "req_b" },
    ]);
    expect(await rowsOf("lead_view_voids", tenant)).toEqual([
      { day, folio: "F2", request_id: "req_c" },
    ]);

    // The charged read is voided now: its runner-up takes its place, the count stays.
    expect(await app.ledger.voidBatch([voidOf(tenant, day, "req_a", ["F1"])])).toBe(0);
    // The read voided before retention ran records late: still not charged.
    await record(tenant, day, "F2", "req_c");
    expect((await rowsOf("lead_views", tenant)).filter((row) => row.day === day)).toEqual([
      { day, folio: "F1", request_id: "req_b" },
    ]);
    expect(await periodCounters(tenant)).toEqual([
      { period_start: oldDay, lead_views: 1 },
      { period_start: day, lead_views: 1 },
    ]);
  });

  it("removes a day's voids and runners-up the day after the window closes, not before", async () => {
    const tenant = freshTenant("closing");
    const day = "2030-06-20";
    await record(tenant, day, "F1", "req_a");
    await record(tenant, day, "F1", "req_b");
    await app.ledger.voidBatch([voidOf(tenant, day, "req_c", ["F2"])]);

    await retentionAt(new Date("2030-06-27T23:59:59Z"));
    expect(await rowsOf("lead_view_runners_up", tenant)).toHaveLength(1);
    expect(await rowsOf("lead_view_voids", tenant)).toHaveLength(1);

    await retentionAt(new Date("2030-06-28T00:00:00Z"));
    expect(await rowsOf("lead_view_runners_up", tenant)).toEqual([]);
    expect(await rowsOf("lead_view_voids", tenant)).toEqual([]);
    // The charged lead-view itself is the billing record: it stays.
    expect(await rowsOf("lead_views", tenant)).toEqual([{ day, folio: "F1", request_id: "req_a" }]);
  });
});
