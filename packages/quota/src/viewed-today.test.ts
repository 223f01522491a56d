import { randomBytes } from "node:crypto";
import { closeTestRedis, openTestRedis } from "@th/test-stores";
import { afterAll, describe, expect, it } from "vitest";
import { createLeadViewMeter, createViewedToday } from "./index.ts";

const redis = openTestRedis();
afterAll(() => closeTestRedis(redis));

const period = { start: new Date("2026-11-10T00:00:00Z"), end: new Date("2026-12-10T00:00:00Z") };
const meter = createLeadViewMeter(redis, {
  loadUsage: async () => ({ used: 0, foliosToday: ["seeded"] }),
});
const viewedToday = createViewedToday(redis);

describe("folios already viewed today", () => {
  it("are those the meter charged that UTC day, seeded ones included, and no other day's", async () => {
    const tenantId = `ten_${randomBytes(4).toString("hex")}`;
    const day = "2026-11-21";
    await meter.reserve({ tenantId, cap: 10, period, day, folios: ["a", "b"] });
    await meter.reserve({ tenantId, cap: 10, period, day: "2026-11-20", folios: ["c"] });
    expect(await viewedToday(tenantId, day, ["a", "b", "c", "d", "seeded"])).toBe(3);
    expect(await viewedToday(tenantId, "2026-11-20", ["a", "c"])).toBe(1);
    expect(await viewedToday(`${tenantId}_other`, day, ["a", "b"])).toBe(0);
    expect(await viewedToday(tenantId, day, [])).toBe(0);
  });

  it("counts past one command's worth of folios", async () => {
    const tenantId = `ten_${randomBytes(4).toString("hex")}`;
    const day = "2026-11-21";
    const folios = Array.from({ length: 25_000 }, (_, index) => `f${index}`);
    // Charged a page at a time, as an export charges them.
    for (let start = 0; start < 12_345; start += 1_000) {
      const page = folios.slice(start, Math.min(start + 1_000, 12_345));
      await meter.reserve({ tenantId, cap: 100_000, period, day, folios: page });
    }
    expect(await viewedToday(tenantId, day, folios)).toBe(12_345);
  });
});
