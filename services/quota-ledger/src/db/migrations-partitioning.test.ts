// The migrations that partition lead_views (decision 0393), run on a ledger the previous release
// filled, while the ledger keeps writing and reading: every row is still there, none was written
// twice, and the service then records, voids and rebuilds as before.
import { copyFile, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { contracts, type LeadViewRecorded, type LeadViewVoided } from "@th/contracts";
import { migrate } from "@th/db";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { rebuildLedger } from "../consumers/rebuild.ts";
import { freshTenant, leadView, tenantChange } from "../testing/fixtures.ts";
import { createLedger } from "./ledger.ts";
import { migrations } from "./migrations.ts";

const FIRST_PARTITIONING = "20261230000000_lead_views_day_checked.sql";
/** Rows written straight into the old table, under a log partition the topic does not have. */
const BULK_PARTITION = 99;
const BULK_ROWS = 20_000;

let before: string;
let harness: TestHarness<Config>;

beforeAll(async () => {
  // A database as the release before partitioning left it.
  before = await mkdtemp(join(tmpdir(), "quota-ledger-migrations-"));
  for (const file of await readdir(migrations.dir)) {
    if (file.endsWith(".sql") && file < FIRST_PARTITIONING) {
      await copyFile(join(migrations.dir, file), join(before, file));
    }
  }
  harness = await createTestHarness({
    config: readConfig({ RETENTION_INTERVAL_MS: "3600000" }),
    migrations: [{ schema: migrations.schema, dir: before }],
    topics: [contracts.leadViewRecorded, contracts.leadViewVoided, contracts.tenantChanged],
  });
});
afterAll(async () => {
  await harness?.close();
  await rm(before, { recursive: true, force: true });
});

const tenant = freshTenant("migrated");
const view = (folio: string, at: string, periodStart: string, requestId: string) => ({
  ...leadView(tenant, folio, at, periodStart),
  request_id: requestId,
});
const voidOf = (day: string, requestId: string, folios: string[]): LeadViewVoided => ({
  tenant_id: tenant,
  request_id: requestId,
  day,
  folios,
  reason: "publish_timeout",
  voided_at: `${day}T12:00:02.000Z`,
});

/** The old release's ledger: events published, then recorded with their places in the log. */
async function fillThroughTheLog(
  views: LeadViewRecorded[],
  voids: LeadViewVoided[],
): Promise<void> {
  await harness.bus.publish(contracts.leadViewRecorded, views);
  await harness.bus.publish(contracts.leadViewVoided, voids);
  const ledger = createLedger(harness.pool);
  await harness.bus.replay(contracts.leadViewRecorded, {
    onBatch: async (records) => {
      await ledger.recordBatch(
        records.map(({ value, partition, offset }) => ({
          view: value,
          position: { partition, offset },
        })),
      );
    },
  });
  await ledger.voidBatch(voids);
}

/** Many tenants' rows over two years, written as the old table took them. */
async function fillInBulk(): Promise<void> {
  await harness.pool.query(
    `WITH rows AS (
       SELECT 'ten_bulk_' || (i % 40) AS tenant_id, date '2025-01-01' + (i % 690) AS day,
              'B' || i AS folio, i
         FROM generate_series(1, $1::int) AS i)
     INSERT INTO lead_views (tenant_id, day, folio, billing_period_start, surface, request_id,
                             recorded_at, source_partition, source_offset)
     SELECT tenant_id, day, folio, date_trunc('month', day)::date, 'rest', 'req_' || i,
            day + time '09:00', $2, i FROM rows`,
    [BULK_ROWS, BULK_PARTITION],
  );
  await harness.pool.query(
    `INSERT INTO period_usage (tenant_id, period_start, lead_views)
     SELECT tenant_id, billing_period_start, count(*) FROM lead_views
      WHERE source_partition = $1 GROUP BY 1, 2`,
    [BULK_PARTITION],
  );
}

async function snapshot(table: string): Promise<string[]> {
  const { rows } = await harness.pool.query<{ row: string }>(
    `SELECT row_to_json(t)::text AS row FROM ${table} t ORDER BY row_to_json(t)::text`,
  );
  return rows.map((row) => row.row);
}

/**
 * The live ledger as the migration runs: batch after batch recorded (one event of each twice, as
 * a redelivery would bring it) and the meter's seed read after each.
 */
function keepWriting(tenantId: string) {
  let stop = false;
  let batches = 0;
  const errors: unknown[] = [];
  const ledger = createLedger(harness.pool);
  const running = (async () => {
    while (!stop) {
      const n = batches++;
      const batch = [`W${n}a`, `W${n}b`, `W${n}a`].map((folio, index) => ({
        view: leadView(tenantId, folio, "2026-11-28T10:00:00.000Z", "2026-11-05"),
        position: { partition: BULK_PARTITION, offset: String(100_000 + n * 3 + index) },
      }));
      try {
        await ledger.recordBatch(batch);
        await ledger.seedFigures(tenantId, "2026-11-05", "2026-11-28");
      } catch (error) {
        errors.push(error);
      }
    }
  })();
  return {
    errors,
    written: () => batches,
    /** Stops, and answers how many batches were written. */
    async stop() {
      stop = true;
      await running;
      return batches;
    },
  };
}

describe("partitioning lead_views on a filled ledger (decision 0393)", () => {
  it("keeps every row and counter, takes writes and reads all along, and then records, voids and rebuilds", async () => {
    await fillThroughTheLog(
      [
        view("OLD", "2025-03-10T09:00:00.000Z", "2025-03-05", "req_old"),
        view("F1", "2026-10-20T09:00:00.000Z", "2026-10-05", "req_a"),
        view("F1", "2026-10-20T09:00:01.000Z", "2026-10-05", "req_b"),
        view("F2", "2026-11-20T09:00:00.000Z", "2026-11-05", "req_c"),
        view("F3", "2026-11-20T09:00:00.000Z", "2026-11-05", "req_d"),
      ],
      [voidOf("2026-11-20", "req_d", ["F3"])],
    );
    await fillInBulk();
    const tables = ["lead_views", "lead_view_runners_up", "lead_view_voids", "period_usage"];
    const old = new Map<string, string[]>();
    for (const table of tables) {
      old.set(table, await snapshot(table));
    }
    expect(old.get("lead_views")).toHaveLength(BULK_ROWS + 3);
    expect(old.get("lead_view_runners_up")).toHaveLength(1);

    const writer = keepWriting(freshTenant("writer"));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const atStart = writer.written();
    const applied = await migrate(harness.config.DATABASE_URL, migrations);
    const duringMigration = writer.written() - atStart;
    const written = await writer.stop();
    expect(applied.applied[0]).toBe(FIRST_PARTITIONING.replace(".sql", ""));
    expect(writer.errors).toEqual([]);
    expect(duringMigration).toBeGreaterThan(0);

    // The table is partitioned now, every old row in it as it was, nothing else changed.
    const { rows: kind } = await harness.pool.query<{ relkind: string }>(
      "SELECT relkind FROM pg_class WHERE oid = 'lead_views'::regclass",
    );
    expect(kind[0]?.relkind).toBe("p");
    const now = await snapshot("lead_views");
    const oldRows = old.get("lead_views") ?? [];
    expect(now.filter((row) => oldRows.includes(row))).toHaveLength(oldRows.length);
    expect(now.length - oldRows.length).toBe(written * 2);
    for (const table of ["lead_view_runners_up", "lead_view_voids"]) {
      expect(await snapshot(table)).toEqual(old.get(table));
    }
    const counters = await snapshot("period_usage");
    expect(counters.filter((row) => !row.includes("ten_writer"))).toEqual(old.get("period_usage"));

    // The service on the new schema: it records, keeps a runner-up, voids and rebuilds.
    const app = await buildApp(harness);
    await app.start();
    try {
      await harness.bus.publish(contracts.tenantChanged, [
        tenantChange(tenant, 1, "starter", 500, "2026-10-05"),
      ]);
      await harness.bus.publish(contracts.leadViewRecorded, [
        view("F4", "2026-11-21T09:00:00.000Z", "2026-11-05", "req_e"),
        view("F4", "2026-11-21T09:00:01.000Z", "2026-11-05", "req_f"),
        view("F5", "2027-02-03T09:00:00.000Z", "2027-01-05", "req_g"),
      ]);
      await harness.bus.publish(contracts.leadViewVoided, [
        voidOf("2026-10-20", "req_a", ["F1"]),
        voidOf("2026-11-21", "req_e", ["F4"]),
      ]);
      const charged = async () =>
        (
          await harness.pool.query<{ folio: string; request_id: string }>(
            `SELECT folio, request_id FROM lead_views WHERE tenant_id = $1
              ORDER BY day, folio`,
            [tenant],
          )
        ).rows;
      await vi.waitFor(
        async () =>
          expect(await charged()).toEqual([
            { folio: "OLD", request_id: "req_old" },
            { folio: "F1", request_id: "req_b" },
            { folio: "F2", request_id: "req_c" },
            { folio: "F4", request_id: "req_f" },
            { folio: "F5", request_id: "req_g" },
          ]),
        { timeout: 10_000, interval: 100 },
      );

      const report = await rebuildLedger({
        pool: harness.pool,
        bus: harness.bus,
        redis: harness.redis,
        liveCatchUpTimeoutMs: 10_000,
      });
      expect(report).toMatchObject({ differences: [], counterDifferences: [], equal: true });
    } finally {
      await app.stop();
    }
  });
});
