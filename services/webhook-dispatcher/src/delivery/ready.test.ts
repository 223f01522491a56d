import { randomBytes, randomUUID } from "node:crypto";
import { createLogger } from "@th/telemetry";
import { testRedisUrl } from "@th/test-stores";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import type { ClaimedRow } from "../db/deliveries.ts";
import { createTenantSlots } from "./concurrency.ts";
import { createReadyQueues } from "./ready.ts";
import { createSlotGate } from "./slot-gate.ts";

const redis = new Redis(testRedisUrl(), { keyPrefix: `test:${randomBytes(6).toString("hex")}:` });
const slots = createTenantSlots(redis, { leaseMs: 3_000 });

afterAll(() => {
  slots.close();
  redis.disconnect();
});

/** The fields of a claimed row the queues and the slot gate read. */
function rowsOf(tenantId: string, count: number, cap: number): ClaimedRow[] {
  return Array.from(
    { length: count },
    (_, i) =>
      ({
        id: `${tenantId}-${i}`,
        tenant_id: tenantId,
        lease_token: randomUUID(),
        concurrent_webhooks: cap,
      }) as ClaimedRow,
  );
}

/** Queues over real tenant slots; sends wait until the test answers them. */
function queuesUnderTest(options: { maxWaitMs?: number; now?: () => number } = {}) {
  const sent: ClaimedRow[] = [];
  const givenBack: ClaimedRow[] = [];
  const finishers = new Map<ClaimedRow, () => void>();
  let drained = 0;
  const gate = createSlotGate({
    slots,
    defaultConcurrency: 1,
    onFreed: () => {},
    onReleased: (tenantIds) => queues.freed(tenantIds),
  });
  const queues = createReadyQueues({
    gate,
    logger: createLogger({ service: "test", level: "fatal" }),
    now: options.now ?? Date.now,
    maxWaitMs: options.maxWaitMs ?? 60_000,
    send: (row) =>
      new Promise<void>((resolve) => {
        sent.push(row);
        finishers.set(row, resolve);
      }),
    giveBack: async (rows) => {
      givenBack.push(...rows);
    },
    onDrained: () => {
      drained++;
    },
  });
  return {
    queues,
    sent,
    givenBack,
    drained: () => drained,
    /** The receiver answered: the slot is freed (as the sender does), and the send is over. */
    answer(row: ClaimedRow) {
      gate.release([row]);
      finishers.get(row)?.();
    },
  };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("tenant ready queues (decision 0290)", () => {
  it("sends up to the tenant's cap at once, then the next waiting row for each freed slot, and asks for a claim only when the queue runs dry", async () => {
    const t = queuesUnderTest();
    const rows = rowsOf(`tn_ready_${randomUUID()}`, 5, 2);
    t.queues.add(rows);
    await until(() => t.sent.length === 2, "the first two sends");
    expect(t.sent).toEqual(rows.slice(0, 2));
    expect(t.queues.waiting()).toBe(3);

    t.answer(rows[0] as ClaimedRow);
    await until(() => t.sent.length === 3, "the third send");
    expect(t.sent[2]).toBe(rows[2]);
    expect(await slots.inFlight(rows[0]?.tenant_id as string)).toBe(2);
    expect(t.drained()).toBe(0);

    t.answer(rows[1] as ClaimedRow);
    t.answer(rows[2] as ClaimedRow);
    await until(() => t.sent.length === 5, "the last sends");
    expect(t.sent).toEqual(rows);
    expect(t.queues.waiting()).toBe(0);
    expect(t.drained()).toBe(1);
    expect(t.givenBack).toEqual([]);
  });

  it("gives a row that waited past its wait back instead of sending it late", async () => {
    let now = Date.now();
    const t = queuesUnderTest({ maxWaitMs: 1_000, now: () => now });
    const rows = rowsOf(`tn_ready_${randomUUID()}`, 2, 1);
    t.queues.add(rows);
    await until(() => t.sent.length === 1, "the first send");
    now += 1_001;
    t.answer(rows[0] as ClaimedRow);
    await until(() => t.givenBack.length === 1, "the stale row given back");
    expect(t.givenBack).toEqual([rows[1]]);
    expect(t.sent).toEqual([rows[0]]);
    expect(t.queues.waiting()).toBe(0);
  });

  it("sends rows whose tenant's slots are all held by another process once that process frees them", async () => {
    const t = queuesUnderTest();
    const tenantId = `tn_ready_${randomUUID()}`;
    const elsewhere = [randomUUID(), randomUUID()];
    expect(await slots.acquire(tenantId, elsewhere, 2)).toBe(2);
    const rows = rowsOf(tenantId, 2, 2);
    t.queues.add(rows);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(t.sent).toEqual([]);

    // Nothing this process frees will wake the rows: they ask again on their own.
    await slots.release(tenantId, elsewhere);
    await until(() => t.sent.length === 2, "the sends after the other process freed its slots");
    expect(t.sent).toEqual(rows);
  });

  it("gives every waiting row back on close and waits for the sends under way", async () => {
    const t = queuesUnderTest();
    const rows = rowsOf(`tn_ready_${randomUUID()}`, 3, 1);
    t.queues.add(rows);
    await until(() => t.sent.length === 1, "the first send");
    let closed = false;
    const closing = t.queues.close().then(() => {
      closed = true;
    });
    await until(() => t.givenBack.length === 2, "the waiting rows given back");
    expect(t.givenBack).toEqual(rows.slice(1));
    expect(closed).toBe(false);
    t.answer(rows[0] as ClaimedRow);
    await closing;
    expect(t.sent).toEqual([rows[0]]);

    const late = rowsOf(rows[0]?.tenant_id as string, 1, 1);
    t.queues.add(late);
    expect(t.givenBack).toContain(late[0]);
  });
});
