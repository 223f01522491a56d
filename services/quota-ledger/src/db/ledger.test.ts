// The ledger's batch write (one call a batch) as a race would try it: a void committed while the
// batch waited for its tenant's lock is seen, runners-up are kept only for events that lost to
// another request's event, and a batch of new views or a redelivered batch leaves none.
import type { LeadViewRecorded } from "@th/contracts";
import type { Pool } from "@th/db";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Config, readConfig } from "../config.ts";
import { freshTenant, leadView } from "../testing/fixtures.ts";
import { createLedger, type Ledger } from "./ledger.ts";
import { migrations } from "./migrations.ts";

let harness: TestHarness<Config>;
let ledger: Ledger;
const DAY = "2026-11-20";
const PERIOD = "2026-11-05";

beforeAll(async () => {
  harness = await createTestHarness({ config: readConfig({}), migrations: [migrations] });
  ledger = createLedger(harness.pool);
});
afterAll(async () => {
  await harness.close();
});

let offset = 0;
const at = (view: LeadViewRecorded) => ({
  view,
  position: { partition: 0, offset: String(offset++) },
});
const view = (tenant: string, folio: string, requestId: string): LeadViewRecorded => ({
  ...leadView(tenant, folio, `${DAY}T10:00:00.000Z`, PERIOD),
  request_id: requestId,
});

async function table(name: "lead_views" | "lead_view_runners_up", tenant: string) {
  const { rows } = await harness.pool.query<{ folio: string; request_id: string }>(
    `SELECT folio, request_id FROM ${name} WHERE tenant_id = $1 ORDER BY folio, request_id`,
    [tenant],
  );
  return rows;
}

async function used(tenant: string): Promise<number> {
  const { rows } = await harness.pool.query<{ lead_views: number }>(
    "SELECT lead_views FROM period_usage WHERE tenant_id = $1",
    [tenant],
  );
  return rows[0]?.lead_views ?? 0;
}

describe("the ledger's batch write (decision 0190, one call a batch)", () => {
  it("sees a void that commits while the batch waits for the tenant's lock, and charges nothing for it", async () => {
    const tenant = freshTenant("lock_race");
    const voider = await harness.pool.connect();
    try {
      // A void in flight: it holds the tenant's bucket exclusively and has not committed.
      await voider.query("BEGIN");
      await voider.query(
        `SELECT pg_advisory_xact_lock(190001, hashtext($1) & 63)`, // the void's own lock
        [tenant],
      );
      await voider.query(
        `INSERT INTO lead_view_voids (tenant_id, day, folio, request_id, voided_at)
         VALUES ($1, $2, 'F1', 'req_void', now())`,
        [tenant, DAY],
      );
      const recording = ledger.recordBatch([at(view(tenant, "F1", "req_void"))]);
      // The batch is blocked on the lock, not finished.
      const early = await Promise.race([
        recording.then(() => "recorded"),
        new Promise((resolve) => setTimeout(() => resolve("waiting"), 300)),
      ]);
      expect(early).toBe("waiting");
      await voider.query("COMMIT");
      await recording;
    } finally {
      voider.release();
    }
    expect(await table("lead_views", tenant)).toEqual([]);
    expect(await used(tenant)).toBe(0);
  });

  it("keeps no runner-up for a batch of new views, nor when the same batch comes again", async () => {
    const tenant = freshTenant("no_runner_up");
    const batch = [
      at(view(tenant, "F1", "req_a")),
      at(view(tenant, "F2", "req_a")),
      at(view(tenant, "F3", "req_b")),
    ];
    await ledger.recordBatch(batch);
    await ledger.recordBatch(batch);
    expect(await table("lead_views", tenant)).toHaveLength(3);
    expect(await table("lead_view_runners_up", tenant)).toEqual([]);
    expect(await used(tenant)).toBe(3);
  });

  it("keeps another request's event of a charged view as its runner-up, in the batch and across batches, but never a voided one", async () => {
    const tenant = freshTenant("runner_up");
    await ledger.recordBatch([at(view(tenant, "F1", "req_a")), at(view(tenant, "F1", "req_b"))]);
    await harness.pool.query(
      `INSERT INTO lead_view_voids (tenant_id, day, folio, request_id, voided_at)
       VALUES ($1, $2, 'F1', 'req_d', now())`,
      [tenant, DAY],
    );
    await ledger.recordBatch([
      at(view(tenant, "F1", "req_c")),
      at(view(tenant, "F1", "req_d")),
      at(view(tenant, "F2", "req_c")),
    ]);
    expect(await table("lead_views", tenant)).toEqual([
      { folio: "F1", request_id: "req_a" },
      { folio: "F2", request_id: "req_c" },
    ]);
    expect(await table("lead_view_runners_up", tenant)).toEqual([
      { folio: "F1", request_id: "req_b" },
      { folio: "F1", request_id: "req_c" },
    ]);
    expect(await used(tenant)).toBe(2);
  });

  it("writes the batches of partitions handled at the same moment in one call, each as it would alone", async () => {
    const tenants = [freshTenant("merged_a"), freshTenant("merged_b"), freshTenant("merged_c")];
    let calls = 0;
    const counting = {
      query: (...args: Parameters<Pool["query"]>) => {
        calls++;
        return (harness.pool.query as (...a: unknown[]) => unknown)(...args);
      },
    } as unknown as Pool;
    const merged = createLedger(counting);
    await Promise.all(
      tenants.map((tenant) =>
        merged.recordBatch([
          at(view(tenant, "F1", "req_1")),
          at(view(tenant, "F1", "req_2")),
          at(view(tenant, "F2", "req_1")),
        ]),
      ),
    );
    expect(calls).toBe(1);
    for (const tenant of tenants) {
      expect(await table("lead_views", tenant)).toEqual([
        { folio: "F1", request_id: "req_1" },
        { folio: "F2", request_id: "req_1" },
      ]);
      expect(await table("lead_view_runners_up", tenant)).toEqual([
        { folio: "F1", request_id: "req_2" },
      ]);
      expect(await used(tenant)).toBe(2);
    }
  });
});
