import { randomUUID } from "node:crypto";
import type { BatchSubscription } from "@th/bus";
import type { MatchFound } from "@th/contracts";
import { matchFound as sampleMatch } from "@th/contracts/samples";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations } from "../db/migrations.ts";
import { ensureDeliveryMonths } from "../db/partitions.ts";
import type { Worker } from "../delivery/worker.ts";
import { matchSubscriptions } from "./index.ts";

// A clock far from the machine's, so a row stamped by the database's would stand out.
const CLOCK = new Date("2031-05-06T07:08:09.000Z");

let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase([migrations]);
  // As the dispatcher does at start, by its clock.
  await ensureDeliveryMonths(db.pool, CLOCK);
  await db.pool.query(
    `INSERT INTO endpoints (id, tenant_id, watchlist_id, url, events)
     VALUES ('ep_clock', 'tn_clock', 'wl_clock', 'https://example.test/hook', '{watchlist.match}')`,
  );
});
afterAll(() => db?.drop());

describe("the intake of match.found", () => {
  it("creates a delivery, due at once, at the dispatcher's time, not the database's", async () => {
    let woken = 0;
    const worker = { wake: () => woken++ } as unknown as Worker;
    const [intake] = matchSubscriptions({ pool: db.pool, worker, now: () => CLOCK.getTime() });
    const value: MatchFound = {
      ...sampleMatch,
      match_id: `m_${randomUUID()}`,
      tenant_id: "tn_clock",
      watchlist: { id: "wl_clock", name: "Clock" },
    };
    await (intake as BatchSubscription).handleBatch([
      { value, headers: {}, key: value.tenant_id, partition: 0, offset: "0" },
    ] as never);
    const { rows } = await db.pool.query<{ created_at: Date; due_at: Date }>(
      "SELECT created_at, due_at FROM deliveries WHERE match_id = $1",
      [value.match_id],
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]?.created_at.toISOString()).toBe(CLOCK.toISOString());
    expect(rows[0]?.due_at.toISOString()).toBe(CLOCK.toISOString());
    expect(woken).toBe(1);
  });
});
