// lead_views is partitioned by month of its day (decision 0393); its key still includes the day,
// so a lead-view is still one per tenant, folio and UTC day, recorded idempotently, in whichever
// partition its day falls: the first one made from the table as it was, a month made ahead, or a
// month made when its first view came.
import type { LeadViewRecorded } from "@th/contracts";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Config, readConfig } from "../config.ts";
import { freshTenant, leadView } from "../testing/fixtures.ts";
import { createLedger } from "./ledger.ts";
import { migrations } from "./migrations.ts";

let harness: TestHarness<Config>;

beforeAll(async () => {
  harness = await createTestHarness({ config: readConfig({}), migrations: [migrations] });
});
afterAll(async () => {
  await harness.close();
});

// A day in the first partition, one in a month made by the migration, one in a month that has no
// partition until a view of it is recorded.
const DAYS = ["2026-11-20", "2027-02-10", "2031-03-05"];
const FOLIOS = ["F1", "F2", "F3", "F4", "F5"];
const WRITERS = 8;

let offset = 0;
function batchOf(tenant: string, requestId: string) {
  return DAYS.flatMap((day) =>
    FOLIOS.map((folio) => ({
      view: { ...leadView(tenant, folio, `${day}T10:00:00.000Z`, day), request_id: requestId },
      position: { partition: 0, offset: String(offset++) },
    })),
  );
}

async function count(sql: string, params: unknown[]): Promise<number> {
  const { rows } = await harness.pool.query<{ n: number }>(sql, params);
  return rows[0]?.n ?? 0;
}

describe("one lead-view per tenant, folio and UTC day in a partitioned ledger", () => {
  it("keeps exactly one row and one count per view when many requests record it at once and again", async () => {
    const tenant = freshTenant("exact");
    // Each writer a ledger of its own, so no call is shared: the writes race in Postgres.
    const writers = Array.from({ length: WRITERS }, () => createLedger(harness.pool));
    const batches = writers.map((_, index) => batchOf(tenant, `req_${index}`));
    await Promise.all(
      writers.map(async (writer, index) => {
        const batch = batches[index] as { view: LeadViewRecorded; position: never }[];
        await writer.recordBatch(batch);
        // The same events delivered again (at-least-once).
        await writer.recordBatch(batch);
      }),
    );
    await Promise.all(writers.map((writer, index) => writer.recordBatch(batches[index] ?? [])));

    const { rows } = await harness.pool.query<{ day: string; folio: string; n: number }>(
      `SELECT to_char(day, 'YYYY-MM-DD') AS day, folio, count(*)::int AS n FROM lead_views
        WHERE tenant_id = $1 GROUP BY 1, 2 ORDER BY 1, 2`,
      [tenant],
    );
    expect(rows).toEqual(DAYS.flatMap((day) => FOLIOS.map((folio) => ({ day, folio, n: 1 }))));
    expect(
      await count("SELECT sum(lead_views)::int AS n FROM period_usage WHERE tenant_id = $1", [
        tenant,
      ]),
    ).toBe(DAYS.length * FOLIOS.length);
    // Every other request's event of a view is its runner-up, once.
    expect(
      await count("SELECT count(*)::int AS n FROM lead_view_runners_up WHERE tenant_id = $1", [
        tenant,
      ]),
    ).toBe(DAYS.length * FOLIOS.length * (WRITERS - 1));
  });

  it("refuses a second row of a view whether it is written to the table or straight into its partition", async () => {
    const tenant = freshTenant("refused");
    await createLedger(harness.pool).recordBatch(batchOf(tenant, "req_first"));
    const insert = (table: string) =>
      harness.pool.query(
        `INSERT INTO ${table} (tenant_id, day, folio, billing_period_start, surface, request_id,
                               recorded_at, source_partition, source_offset)
         VALUES ($1, '2027-02-10', 'F1', '2027-02-10', 'rest', 'req_other', now(), 0, 0)`,
        [tenant],
      );
    await expect(insert("lead_views")).rejects.toMatchObject({ code: "23505" });
    const { rows } = await harness.pool.query<{ partition: string }>(
      `SELECT tableoid::regclass::text AS partition FROM lead_views
        WHERE tenant_id = $1 AND day = '2027-02-10' AND folio = 'F1'`,
      [tenant],
    );
    await expect(insert(rows[0]?.partition as string)).rejects.toMatchObject({ code: "23505" });
  });

  it("gives every partition, the ones made later too, the primary key on (tenant_id, day, folio)", async () => {
    await createLedger(harness.pool).recordBatch(batchOf(freshTenant("keys"), "req_keys"));
    const { rows } = await harness.pool.query<{ relation: string; key: string | null }>(
      `SELECT c.relname AS relation,
              (SELECT string_agg(a.attname, ',' ORDER BY k.ord)
                 FROM pg_index x CROSS JOIN unnest(x.indkey) WITH ORDINALITY AS k(attnum, ord)
                 JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum
                WHERE x.indrelid = c.oid AND x.indisprimary) AS key
         FROM pg_class c
        WHERE c.oid = 'lead_views'::regclass
           OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'lead_views'::regclass)`,
    );
    // The parent, the first partition, the months made ahead and the month made on demand.
    expect(rows.length).toBeGreaterThanOrEqual(5);
    expect(rows.map((row) => row.relation)).toContain("lead_views_p203103");
    for (const row of rows) {
      expect(row).toEqual({ relation: row.relation, key: "tenant_id,day,folio" });
    }
  });
});
