import { randomUUID } from "node:crypto";
import { createTestDatabase, type TestDatabase } from "@th/db/testing";
import {
  ApiError,
  createMetrics,
  createRetention,
  ERROR_STATUS,
  listPartitions,
  type RetentionOptions,
} from "@th/service-kit";
import { createLogger } from "@th/telemetry";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { HOLD_MS } from "../domain/schedule.ts";
import { createDeliveryLog } from "../endpoints/delivery-log.ts";
import type { EndpointDeps } from "../endpoints/lookup.ts";
import { migrations } from "./migrations.ts";
import { ATTEMPTS, DELIVERIES, ensureDeliveryMonths } from "./partitions.ts";
import { attemptsRetention, deliveriesRetention, dispatcherRetention } from "./retention.ts";

const DAY = 86_400_000;
const HOUR = 3_600_000;
let db: TestDatabase;
/** The first month after the partition the migration made of the table as it was. */
let monthA: Date;
let monthB: Date;

beforeAll(async () => {
  db = await createTestDatabase([migrations]);
  const first = (await listPartitions(db.pool, DELIVERIES))[0];
  monthA = first?.to ?? new Date();
  monthB = new Date(Date.UTC(monthA.getUTCFullYear(), monthA.getUTCMonth() + 1, 1));
  await db.pool.query(
    `INSERT INTO endpoints (id, tenant_id, watchlist_id, url, events)
     VALUES ('ep_r', 'tn_r', 'wl_r', 'https://example.test/hook', '{watchlist.match}')`,
  );
});
afterAll(() => db.drop());

beforeEach(async () => {
  await db.pool.query("TRUNCATE deliveries, attempts");
  await ensureDeliveryMonths(db.pool, monthA);
});

const at = (base: Date, ms: number) => new Date(base.getTime() + ms);

interface Row {
  createdAt: Date;
  state: string;
  holdUntil?: Date;
  leaseUntil?: Date;
  attemptsAt?: Date[];
}

/** Stores a delivery of endpoint ep_r, and an attempt at each of `attemptsAt`. */
async function delivery(row: Row): Promise<string> {
  const id = randomUUID();
  await db.pool.query(
    `INSERT INTO deliveries (id, endpoint_id, tenant_id, watchlist_id, match_id, folio, event_type,
                             body, state, created_at, due_at, hold_until, lease_until,
                             dead_lettered_at)
     VALUES ($1::uuid, 'ep_r', 'tn_r', 'wl_r', $6, '23-1', 'watchlist.match', '{}', $2, $3, $3,
             $4, $5, CASE WHEN $2 = 'dead_letter' THEN $3::timestamptz END)`,
    [id, row.state, row.createdAt, row.holdUntil ?? null, row.leaseUntil ?? null, `m_${id}`],
  );
  for (const [n, attemptedAt] of (row.attemptsAt ?? [row.createdAt]).entries()) {
    await db.pool.query(
      `INSERT INTO attempts (delivery_id, replay_no, attempt, attempted_at, state)
       VALUES ($1, 0, $2, $3, $4)`,
      [id, n + 1, attemptedAt, row.state],
    );
  }
  return id;
}

/** A completed delivery of `createdAt`, held the 30 days from then. */
function completed(createdAt: Date, attemptsAt?: Date[]): Promise<string> {
  return delivery({ createdAt, state: "complete", holdUntil: at(createdAt, HOLD_MS), attemptsAt });
}

async function stored(table: string): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  return rows[0]?.n ?? 0;
}

async function exists(id: string): Promise<boolean> {
  const { rows } = await db.pool.query("SELECT 1 FROM deliveries WHERE id = $1", [id]);
  return rows.length > 0;
}

async function monthNames(parent: string): Promise<string[]> {
  return (await listPartitions(db.pool, parent)).map((month) => month.name);
}

const partitionOf = (parent: string, month: Date) =>
  `${parent}_p${month.toISOString().slice(0, 7).replace("-", "")}`;

function retentionAt(clock: { now: Date }, options: Partial<RetentionOptions> = {}) {
  return createRetention({
    pool: db.pool,
    rules: dispatcherRetention,
    metrics: createMetrics("webhook-dispatcher"),
    logger: createLogger({ service: "test", level: "fatal" }),
    now: () => clock.now,
    ...options,
  });
}

describe("retention of deliveries and attempts", () => {
  // First: the other cases' rounds drop that partition while it is empty.
  it("drops the partition made of the table as it was, once nothing in it is kept", async () => {
    const [first] = await listPartitions(db.pool, DELIVERIES);
    const old = await completed(at(monthA, -40 * DAY));
    const clock = { now: at(monthA, HOLD_MS - DAY) };
    const retention = retentionAt(clock);
    await retention.runOnce();
    expect(await exists(old)).toBe(true);
    clock.now = at(monthA, HOLD_MS + DAY);
    await retention.runOnce();
    expect(await exists(old)).toBe(false);
    expect(await monthNames(DELIVERIES)).not.toContain(first?.name);
    expect((await listPartitions(db.pool, DELIVERIES))[0]?.from).toEqual(monthA);
  });

  it("drops a month once every delivery in it is past its hold, its attempts' month with it", async () => {
    for (let n = 0; n < 5; n++) {
      await completed(at(monthA, n * DAY + HOUR), [at(monthA, n * DAY + HOUR)]);
    }
    const next = await completed(at(monthB, HOUR));
    const clock = { now: at(monthB, HOLD_MS - HOUR) };
    const retention = retentionAt(clock);
    await retention.runOnce();
    // Within 30 days of the month's end: nothing is looked at.
    expect(await monthNames(DELIVERIES)).toContain(partitionOf(DELIVERIES, monthA));
    clock.now = at(monthB, HOLD_MS + HOUR);
    const removed = await retention.runOnce();
    expect(removed.get("dispatcher.deliveries")).toBe(5);
    expect(removed.get("dispatcher.attempts")).toBe(5);
    expect(await monthNames(DELIVERIES)).not.toContain(partitionOf(DELIVERIES, monthA));
    expect(await monthNames(ATTEMPTS)).not.toContain(partitionOf(ATTEMPTS, monthA));
    expect(await exists(next)).toBe(true);
    expect(await stored("attempts")).toBe(1);
  });

  it.each(["pending", "retrying", "exhausted"])(
    "keeps a month while a delivery in it still waits to be sent (%s)",
    async (state) => {
      await completed(at(monthA, HOUR));
      const waiting = await delivery({ createdAt: at(monthA, 2 * HOUR), state });
      const clock = { now: at(monthB, HOLD_MS + DAY) };
      const retention = retentionAt(clock);
      await retention.runOnce();
      expect(await stored("deliveries")).toBe(2);
      // Past its deadline the expired one goes, the waiting one stays.
      clock.now = at(monthB, 63 * DAY);
      await retention.runOnce();
      const { rows } = await db.pool.query<{ id: string }>("SELECT id FROM deliveries");
      expect(rows.map((row) => row.id)).toEqual([waiting]);
    },
  );

  it("never removes a dead letter inside its hold, and removes it a day after the hold ends", async () => {
    await completed(at(monthA, HOUR));
    const deadLetteredAt = at(monthB, 10 * DAY);
    const deadLetter = await delivery({
      createdAt: at(monthA, 2 * DAY),
      state: "dead_letter",
      holdUntil: at(deadLetteredAt, HOLD_MS),
      attemptsAt: [at(monthA, 2 * DAY), deadLetteredAt],
    });
    const clock = { now: at(monthB, HOLD_MS + HOUR) };
    const retention = retentionAt(clock);
    for (const now of [
      at(deadLetteredAt, HOLD_MS - HOUR),
      at(deadLetteredAt, HOLD_MS + DAY - HOUR),
    ]) {
      clock.now = now;
      await retention.runOnce();
      expect(await exists(deadLetter)).toBe(true);
      expect(await stored("deliveries")).toBe(2);
      expect(await stored("attempts")).toBe(3);
    }
    clock.now = at(deadLetteredAt, HOLD_MS + DAY + HOUR);
    await retention.runOnce();
    expect(await exists(deadLetter)).toBe(false);
    expect(await stored("deliveries")).toBe(0);
    expect(await monthNames(DELIVERIES)).not.toContain(partitionOf(DELIVERIES, monthA));
  });

  it("never removes a parked delivery while its hold lasts, nor one being sent", async () => {
    const createdAt = at(monthB, -HOUR);
    const parked = await delivery({ createdAt, state: "parked" });
    const expired = await completed(at(monthA, HOUR));
    const clock = { now: at(createdAt, 32 * DAY - HOUR) };
    const retention = retentionAt(clock);
    await retention.runOnce();
    expect(await exists(parked)).toBe(true);
    expect(await exists(expired)).toBe(true);
    clock.now = at(createdAt, 32 * DAY + HOUR);
    await retention.runOnce();
    expect(await exists(parked)).toBe(false);
    expect(await monthNames(DELIVERIES)).not.toContain(partitionOf(DELIVERIES, monthA));
    // A month thinned past its deadline (a replayed delivery pins it): a parked delivery long
    // past its keep that is leased right now stays until its lease ends.
    await delivery({
      createdAt: at(monthB, HOUR),
      state: "complete",
      holdUntil: at(monthB, 150 * DAY),
    });
    const leasedFrom = at(monthB, 2 * HOUR);
    const leased = await delivery({ createdAt: leasedFrom, state: "parked" });
    const idle = await delivery({ createdAt: leasedFrom, state: "parked" });
    clock.now = at(monthB, 100 * DAY);
    await db.pool.query("UPDATE deliveries SET lease_until = $2 WHERE id = $1", [
      leased,
      at(clock.now, 10_000),
    ]);
    await retention.runOnce();
    expect(await exists(idle)).toBe(false);
    expect(await exists(leased)).toBe(true);
  });

  it("thins a month pinned past its deadline in bounded batches, never a waiting delivery, and drops it when the pin ends", async () => {
    const expired: string[] = [];
    for (let n = 0; n < 25; n++) {
      expired.push(await completed(at(monthA, n * HOUR), [at(monthA, n * HOUR)]));
    }
    const pinHolds = at(monthB, 70 * DAY);
    const pin = await delivery({
      createdAt: at(monthA, DAY),
      state: "complete",
      holdUntil: pinHolds,
      attemptsAt: [at(monthA, DAY), at(monthB, 39 * DAY)],
    });
    const waiting = await delivery({ createdAt: at(monthA, 2 * DAY), state: "retrying" });
    const clock = { now: at(monthB, 62 * DAY + HOUR) };
    const retention = retentionAt(clock, { batchSize: 10, maxBatchesPerRound: 2 });
    expect((await retention.runOnce()).get("dispatcher.deliveries")).toBe(20);
    expect((await retention.runOnce()).get("dispatcher.deliveries")).toBe(5);
    expect(await stored("deliveries")).toBe(2);
    expect(await exists(pin)).toBe(true);
    expect(await exists(waiting)).toBe(true);
    // The attempts of the deleted deliveries go; the kept ones' stay.
    const { rows } = await db.pool.query<{ delivery_id: string }>(
      "SELECT DISTINCT delivery_id FROM attempts ORDER BY 1",
    );
    expect(rows.map((row) => row.delivery_id)).toEqual([pin, waiting].sort());
    await db.pool.query("UPDATE deliveries SET state = 'complete', hold_until = $2 WHERE id = $1", [
      waiting,
      at(monthB, 40 * DAY),
    ]);
    clock.now = at(pinHolds, HOUR);
    await retention.runOnce();
    expect(await stored("deliveries")).toBe(0);
    expect(await monthNames(DELIVERIES)).not.toContain(partitionOf(DELIVERIES, monthA));
    expect(await monthNames(ATTEMPTS)).not.toContain(partitionOf(ATTEMPTS, monthA));
  });

  it("answers not found, not an error, to a replay of a dead letter retention removed", async () => {
    const id = await delivery({
      createdAt: at(monthA, HOUR),
      state: "dead_letter",
      holdUntil: at(monthA, HOLD_MS + HOUR),
    });
    const clock = { now: at(monthB, HOLD_MS + DAY) };
    const log = createDeliveryLog({
      pool: db.pool,
      now: () => clock.now.getTime(),
      wake: () => {},
    } as unknown as EndpointDeps);
    // Past its hold but not yet removed: refused as a conflict.
    await expect(log.replay("tn_r", "wl_r", "ep_r", id)).rejects.toMatchObject({
      code: "conflict",
    });
    await retentionAt(clock).runOnce();
    expect(await exists(id)).toBe(false);
    for (const call of [
      () => log.replay("tn_r", "wl_r", "ep_r", id),
      () => log.delivery("tn_r", "wl_r", "ep_r", id),
    ]) {
      const error = await call().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).code).toBe("not_found");
      expect(ERROR_STATUS[(error as ApiError).code]).toBe(404);
    }
  });

  it("exports the rows removed and how far behind each table is", async () => {
    await completed(at(monthA, HOUR));
    const metrics = createMetrics("webhook-dispatcher");
    const clock = { now: at(monthB, 62 * DAY + 3 * DAY) };
    // Measured without a sweep: the month should have gone three days ago.
    const behind = await deliveriesRetention.behindMs?.(db.pool, clock.now);
    expect(behind).toBe(3 * DAY);
    expect(await attemptsRetention.behindMs?.(db.pool, clock.now)).toBeLessThanOrEqual(0);
    const retention = retentionAt(clock, { metrics });
    await retention.runOnce();
    const text = await metrics.registry.metrics();
    const value = (name: string, table: string) => {
      const line = text
        .split("\n")
        .find((entry) => entry.startsWith(`${name}{`) && entry.includes(`table="${table}"`));
      return Number(line?.slice(line.lastIndexOf(" ") + 1));
    };
    expect(value("th_retention_removed_rows_total", "dispatcher.deliveries")).toBe(1);
    expect(value("th_retention_removed_rows_total", "dispatcher.attempts")).toBe(1);
    expect(value("th_retention_behind_seconds", "dispatcher.deliveries")).toBe(0);
    expect(value("th_table_bytes", "dispatcher.deliveries")).toBeGreaterThan(0);
  });
});
