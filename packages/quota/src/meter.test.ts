import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createLeadViewMeter, type LedgerUsage, utcDay } from "./index.ts";

const redis = new Redis("redis://127.0.0.1:6379", {
  keyPrefix: `test:${randomBytes(6).toString("hex")}:`,
});
afterAll(async () => {
  const keys = await redis.keys("*");
  const prefix = redis.options.keyPrefix ?? "";
  if (keys.length > 0) {
    await redis.del(...keys.map((key) => key.slice(prefix.length)));
  }
  redis.disconnect();
});

const period = { start: new Date("2026-11-10T00:00:00Z"), end: new Date("2026-12-10T00:00:00Z") };
let ledger: Record<string, LedgerUsage> = {};
const loads: string[] = [];
const meter = createLeadViewMeter(redis, {
  loadUsage: async (tenantId, _period, day) => {
    loads.push(`${tenantId}:${day}`);
    return ledger[tenantId] ?? { used: 0, foliosToday: [] };
  },
});

const tenant = () => `ten_${randomBytes(4).toString("hex")}`;

describe("lead-view metering", () => {
  it("charges one lead-view per unique folio per UTC day", async () => {
    const id = tenant();
    const first = await meter.reserve({
      tenantId: id,
      cap: 10,
      period,
      day: "2026-11-21",
      folios: ["a", "b", "a"],
    });
    expect(first).toEqual({ ok: true, charged: ["a", "b"], remaining: 8 });
    const again = await meter.reserve({
      tenantId: id,
      cap: 10,
      period,
      day: "2026-11-21",
      folios: ["a"],
    });
    expect(again).toEqual({ ok: true, charged: [], remaining: 8 });
  });

  it("counts 23:59:59 and 00:00:01 UTC as two lead-views", async () => {
    const id = tenant();
    const late = utcDay(new Date("2026-11-21T23:59:59Z"));
    const early = utcDay(new Date("2026-11-22T00:00:01Z"));
    await meter.reserve({ tenantId: id, cap: 10, period, day: late, folios: ["a"] });
    const next = await meter.reserve({ tenantId: id, cap: 10, period, day: early, folios: ["a"] });
    expect(next).toEqual({ ok: true, charged: ["a"], remaining: 8 });
  });

  it("is all-or-nothing when the remaining lead-views cannot cover every new folio", async () => {
    const id = tenant();
    await meter.reserve({ tenantId: id, cap: 3, period, day: "2026-11-21", folios: ["a", "b"] });
    const refused = await meter.reserve({
      tenantId: id,
      cap: 3,
      period,
      day: "2026-11-21",
      folios: ["a", "c", "d"],
    });
    expect(refused).toEqual({ ok: false, remaining: 1, needed: 2 });
    const stillOne = await meter.reserve({
      tenantId: id,
      cap: 3,
      period,
      day: "2026-11-21",
      folios: ["c"],
    });
    expect(stillOne).toEqual({ ok: true, charged: ["c"], remaining: 0 });
    const seen = await meter.reserve({
      tenantId: id,
      cap: 3,
      period,
      day: "2026-11-21",
      folios: ["a", "b", "c"],
    });
    expect(seen.ok).toBe(true);
  });

  it("never exceeds the cap under concurrency", async () => {
    const id = tenant();
    const results = await Promise.all(
      Array.from({ length: 500 }, (_, i) =>
        meter.reserve({ tenantId: id, cap: 137, period, day: "2026-11-21", folios: [`f${i}`] }),
      ),
    );
    expect(results.filter((result) => result.ok).length).toBe(137);
    expect(await meter.remaining({ tenantId: id, cap: 137, period, day: "2026-11-21" })).toBe(0);
  });

  it("gives back released views", async () => {
    const id = tenant();
    await meter.reserve({ tenantId: id, cap: 5, period, day: "2026-11-21", folios: ["a", "b"] });
    await meter.release({ tenantId: id, period, day: "2026-11-21", folios: ["b"] });
    expect(await meter.remaining({ tenantId: id, cap: 5, period, day: "2026-11-21" })).toBe(4);
    const recharged = await meter.reserve({
      tenantId: id,
      cap: 5,
      period,
      day: "2026-11-21",
      folios: ["b"],
    });
    expect(recharged).toEqual({ ok: true, charged: ["b"], remaining: 3 });
  });

  it("recovers a flushed counter from the ledger without giving away or double-charging views", async () => {
    const id = tenant();
    await meter.reserve({
      tenantId: id,
      cap: 10,
      period,
      day: "2026-11-21",
      folios: ["a", "b", "c"],
    });
    ledger[id] = { used: 3, foliosToday: ["a", "b", "c"] };
    const prefix = redis.options.keyPrefix ?? "";
    const keys = (await redis.keys(`*${id}*`)).map((key) => key.slice(prefix.length));
    await redis.del(...keys);
    const afterFlush = await meter.reserve({
      tenantId: id,
      cap: 10,
      period,
      day: "2026-11-21",
      folios: ["a", "d"],
    });
    expect(afterFlush).toEqual({ ok: true, charged: ["d"], remaining: 6 });
    expect(loads).toContain(`${id}:2026-11-21`);
    ledger = {};
  });

  it("never lets a late seed overwrite a live counter unless forced", async () => {
    const id = tenant();
    await meter.reserve({ tenantId: id, cap: 10, period, day: "2026-11-21", folios: ["a"] });
    expect(await meter.seed(id, period, "2026-11-21", { used: 0, foliosToday: [] })).toBe(false);
    expect(await meter.remaining({ tenantId: id, cap: 10, period, day: "2026-11-21" })).toBe(9);
    expect(await meter.seed(id, period, "2026-11-21", { used: 4, foliosToday: ["a"] }, true)).toBe(
      true,
    );
    expect(await meter.remaining({ tenantId: id, cap: 10, period, day: "2026-11-21" })).toBe(6);
  });
});
