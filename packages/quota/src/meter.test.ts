import { randomBytes } from "node:crypto";
import { closeTestRedis, openTestRedis } from "@th/test-stores";
import { afterAll, describe, expect, it } from "vitest";
import {
  createLeadViewMeter,
  foliosToRecord,
  type Granted,
  type LedgerUsage,
  openLeadViewCharge,
  utcDay,
} from "./index.ts";

const redis = openTestRedis();
afterAll(() => closeTestRedis(redis));

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
    expect(first).toMatchObject({ ok: true, charged: ["a", "b"], unsettled: [], remaining: 8 });
    const again = await meter.reserve({
      tenantId: id,
      cap: 10,
      period,
      day: "2026-11-21",
      folios: ["a"],
    });
    // Not charged again (moments later it is still unsettled, so this read records it too).
    expect(again).toMatchObject({ ok: true, charged: [], unsettled: ["a"], remaining: 8 });
  });

  it("gives a tenant's day keys their expiry when one call carries several of its reservations", async () => {
    const id = tenant();
    const day = "2026-11-21";
    // Reservations asked for in one turn of the event loop go to Redis in one script.
    await Promise.all(
      ["a", "b", "c"].map((folio) =>
        meter.reserve({ tenantId: id, cap: 10, period, day, folios: [folio] }),
      ),
    );
    expect(await redis.scard(`th:lv:day:${id}:${day}`)).toBe(3);
    expect(await redis.ttl(`th:lv:day:${id}:${day}`)).toBeGreaterThan(0);
    expect(await redis.hlen(`th:lv:pend:${id}:${day}`)).toBe(3);
    expect(await redis.pttl(`th:lv:pend:${id}:${day}`)).toBeGreaterThan(0);
  });

  it("counts 23:59:59 and 00:00:01 UTC as two lead-views", async () => {
    const id = tenant();
    const late = utcDay(new Date("2026-11-21T23:59:59Z"));
    const early = utcDay(new Date("2026-11-22T00:00:01Z"));
    await meter.reserve({ tenantId: id, cap: 10, period, day: late, folios: ["a"] });
    const next = await meter.reserve({ tenantId: id, cap: 10, period, day: early, folios: ["a"] });
    expect(next).toMatchObject({ ok: true, charged: ["a"], remaining: 8 });
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
    expect(stillOne).toMatchObject({ ok: true, charged: ["c"], remaining: 0 });
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
    const reserved = await meter.reserve({
      tenantId: id,
      cap: 5,
      period,
      day: "2026-11-21",
      folios: ["a", "b"],
    });
    if (!reserved.ok) {
      throw new Error("reservation refused");
    }
    const released = await meter.release({
      tenantId: id,
      period,
      day: "2026-11-21",
      reservation: reserved.reservation,
      folios: ["b"],
    });
    expect(released).toBe(1);
    expect(await meter.remaining({ tenantId: id, cap: 5, period, day: "2026-11-21" })).toBe(4);
    const recharged = await meter.reserve({
      tenantId: id,
      cap: 5,
      period,
      day: "2026-11-21",
      folios: ["b"],
    });
    expect(recharged).toMatchObject({ ok: true, charged: ["b"], remaining: 3 });
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
    expect(afterFlush).toMatchObject({ ok: true, charged: ["d"], remaining: 6 });
    expect(loads).toContain(`${id}:2026-11-21`);
    ledger = {};
  });

  it("serves a folio already viewed today when the period is over its cap after a downgrade", async () => {
    const id = tenant();
    await meter.reserve({ tenantId: id, cap: 10, period, day: "2026-11-21", folios: ["a", "b"] });
    const reread = await meter.reserve({
      tenantId: id,
      cap: 1,
      period,
      day: "2026-11-21",
      folios: ["a"],
    });
    expect(reread).toMatchObject({ ok: true, charged: [], remaining: 0 });
    const fresh = await meter.reserve({
      tenantId: id,
      cap: 1,
      period,
      day: "2026-11-21",
      folios: ["c"],
    });
    expect(fresh).toEqual({ ok: false, remaining: 0, needed: 1 });
  });

  it("adds the ledger's folios of the day to those Redis holds when it seeds, counting those the ledger lacks, and replaces them only when forced", async () => {
    const id = tenant();
    const day = "2026-11-21";
    const foliosToday = async () => (await redis.smembers(`th:lv:day:${id}:${day}`)).sort();
    await meter.reserve({ tenantId: id, cap: 10, period, day, folios: ["a"] });
    // The counter expires while a's event is still on its way to the ledger, which has b.
    await redis.del(`th:lv:used:${id}:${utcDay(period.start)}`);
    expect(await meter.seed(id, period, day, { used: 1, foliosToday: ["b"] })).toBe(true);
    expect(await foliosToday()).toEqual(["a", "b"]);
    // a is counted too, on top of the ledger's one: it was charged, its event is on its way.
    expect(await meter.remaining({ tenantId: id, cap: 10, period, day })).toBe(8);
    expect(await meter.seed(id, period, day, { used: 1, foliosToday: ["b"] }, true)).toBe(true);
    expect(await foliosToday()).toEqual(["b"]);
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

describe("lead-view metering: a charge is final only once recorded", () => {
  let clock = Date.parse("2026-11-21T12:00:00Z");
  const settleWindowMs = 60_000;
  const timed = createLeadViewMeter(redis, {
    loadUsage: async () => ({ used: 0, foliosToday: [] }),
    now: () => clock,
    settleWindowMs,
  });
  const day = "2026-11-21";
  const reserveOk = async (id: string, folios: string[], reservation?: string) => {
    const result = await timed.reserve({
      tenantId: id,
      cap: 10,
      period,
      day,
      folios,
      ...(reservation ? { reservation } : {}),
    });
    if (!result.ok) {
      throw new Error("reservation refused");
    }
    return result;
  };

  it("has a concurrent read of a folio charged moments ago record it too, and then keeps the charge when the first read fails", async () => {
    const id = tenant();
    const first = await reserveOk(id, ["x", "y"]);
    expect(first.charged).toEqual(["x", "y"]);
    // A second request for x while the first has not recorded it yet.
    const second = await reserveOk(id, ["x"]);
    expect(second).toMatchObject({ charged: [], unsettled: ["x"], remaining: 8 });
    // The first request's publish fails: y goes back, x stays charged, the second records it.
    const released = await timed.release({
      tenantId: id,
      period,
      day,
      reservation: first.reservation,
      folios: first.charged,
    });
    expect(released).toBe(1);
    expect(await timed.remaining({ tenantId: id, cap: 10, period, day })).toBe(9);
    // A third read in the window records it too, and so would any later one.
    const third = await reserveOk(id, ["x"]);
    expect(third).toMatchObject({ charged: [], unsettled: ["x"], remaining: 9 });
    expect(await reserveOk(id, ["x"])).toMatchObject({ charged: [], unsettled: ["x"] });
    // Nor can the second alone: the third reader still holds it and may record it.
    expect(
      await timed.release({
        tenantId: id,
        period,
        day,
        reservation: second.reservation,
        folios: ["x"],
      }),
    ).toBe(0);
  });

  it("treats a charge as settled after the window: no release, and later reads are plain re-reads", async () => {
    const id = tenant();
    const first = await reserveOk(id, ["x"]);
    clock += settleWindowMs;
    expect(await reserveOk(id, ["x"])).toMatchObject({ charged: [], unsettled: [] });
    expect(
      await timed.release({
        tenantId: id,
        period,
        day,
        reservation: first.reservation,
        folios: ["x"],
      }),
    ).toBe(0);
    expect(await timed.remaining({ tenantId: id, cap: 10, period, day })).toBe(9);
  });

  it("takes a pending entry it cannot read for settled instead of failing the read", async () => {
    const id = tenant();
    await reserveOk(id, ["x"]);
    await redis.hset(`th:lv:pend:${id}:${day}`, "x", "garbled");
    expect(await reserveOk(id, ["x"])).toMatchObject({ charged: [], unsettled: [] });
  });

  it("answers the same reservation asked again (a resent command) with its own charges, not as a re-read", async () => {
    const id = tenant();
    const first = await reserveOk(id, ["x", "y"]);
    const resent = await reserveOk(id, ["x", "y"], first.reservation);
    expect(resent).toMatchObject({ charged: ["x", "y"], unsettled: [], remaining: 8 });
  });
});

describe("lead-view metering: a shared charge goes back once its last reader gives it up", () => {
  const day = "2026-11-21";
  const clock = Date.parse("2026-11-21T12:00:00Z");
  const shared = createLeadViewMeter(redis, {
    loadUsage: async () => ({ used: 0, foliosToday: [] }),
    now: () => clock,
    settleWindowMs: 60_000,
  });
  const pendingKey = (id: string) => `th:lv:pend:${id}:${day}`;
  const remaining = (id: string) => shared.remaining({ tenantId: id, cap: 10, period, day });
  /** One reader of `folios`, as the webhook dispatcher runs it: reserve, then record or give up. */
  const reader = async (id: string, folios: string[]) => {
    const charge = openLeadViewCharge(shared, { tenantId: id, period, day });
    const granted = await charge.reserve(10, folios);
    if (!granted.ok) {
      throw new Error("reservation refused");
    }
    return {
      granted,
      again: () => charge.reserve(10, folios) as Promise<Granted>,
      fail: () => charge.giveBack(foliosToRecord(granted)),
      recorded: () => charge.settle(foliosToRecord(granted)),
    };
  };

  it("gives a folio back once when every reader sharing its charge fails, not before", async () => {
    const id = tenant();
    const a = await reader(id, ["x"]);
    const b = await reader(id, ["x"]);
    expect(b.granted).toMatchObject({ charged: [], unsettled: ["x"], remaining: 9 });
    // A fails first: B may still record the view, so the charge stays.
    expect(await a.fail()).toBe(0);
    expect(await remaining(id)).toBe(9);
    const c = await reader(id, ["x"]);
    expect(c.granted).toMatchObject({ charged: [], unsettled: ["x"], remaining: 9 });
    expect(await c.fail()).toBe(0);
    // B, the last reader holding it, fails too: nobody recorded x, so it goes back.
    expect(await b.fail()).toBe(1);
    expect(await remaining(id)).toBe(10);
    expect(await redis.hexists(pendingKey(id), "x")).toBe(0);
    const next = await reader(id, ["x"]);
    expect(next.granted).toMatchObject({ charged: ["x"], unsettled: [], remaining: 9 });
  });

  it("keeps the charge of a shared folio one reader recorded, though its charger failed", async () => {
    const id = tenant();
    const a = await reader(id, ["x"]);
    const b = await reader(id, ["x"]);
    expect(await a.fail()).toBe(0);
    await b.recorded();
    expect(await remaining(id)).toBe(9);
    expect(await redis.hexists(pendingKey(id), "x")).toBe(0);
    // Final now: a later read that day is free and records nothing, and nobody gives it back.
    expect((await reader(id, ["x"])).granted).toMatchObject({
      charged: [],
      unsettled: [],
      remaining: 9,
    });
    expect(await b.fail()).toBe(0);
    expect(await remaining(id)).toBe(9);
  });

  it("answers a resent sharer as unsettled and lists it once, and a resent charger as charged", async () => {
    const id = tenant();
    const a = await reader(id, ["x"]);
    const b = await reader(id, ["x"]);
    expect(await b.again()).toMatchObject({ charged: [], unsettled: ["x"], remaining: 9 });
    expect(await b.again()).toMatchObject({ charged: [], unsettled: ["x"], remaining: 9 });
    // The charger asking again gets its own charge, though another reader shares it.
    expect(await a.again()).toMatchObject({ charged: ["x"], unsettled: [], remaining: 9 });
    // One give-up each: the folio goes back once, and the counter never drops below its start.
    expect(await a.fail()).toBe(0);
    expect(await b.fail()).toBe(1);
    expect(await a.fail()).toBe(0);
    expect(await b.fail()).toBe(0);
    expect(await remaining(id)).toBe(10);
  });

  it("reads a legacy shared entry as before: nobody gives it back, any settlement removes it", async () => {
    const id = tenant();
    const a = await reader(id, ["x"]);
    await redis.hset(pendingKey(id), "x", `shared|${clock}`);
    const b = await reader(id, ["x"]);
    expect(b.granted).toMatchObject({ charged: [], unsettled: ["x"], remaining: 9 });
    expect(await redis.hget(pendingKey(id), "x")).toBe(`shared|${clock}`);
    expect(await a.fail()).toBe(0);
    expect(await b.fail()).toBe(0);
    expect(await remaining(id)).toBe(9);
    await shared.settle({ tenantId: id, day, reservation: "another", folios: ["x"] });
    expect(await redis.hexists(pendingKey(id), "x")).toBe(0);
    expect((await reader(id, ["x"])).granted).toMatchObject({ charged: [], unsettled: [] });
  });

  it("stops naming the holders of a folio read by very many readers at once, and keeps its charge", async () => {
    const id = tenant();
    const readers = [];
    for (let i = 0; i < 20; i++) {
      readers.push(await reader(id, ["x"]));
    }
    const given = await Promise.all(readers.map((one) => one.fail()));
    expect(given.reduce((sum, n) => sum + n, 0)).toBe(0);
    expect(await remaining(id)).toBe(9);
  });
});
