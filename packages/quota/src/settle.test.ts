// Settling acknowledged charges, as a reader racing them would try it: a settled folio's later
// reads are free and record nothing, only the owner (or a reader that recorded the folio too)
// settles an entry, a settled charge can no longer be given back, and settlements of one turn
// share one script call.
import { randomBytes } from "node:crypto";
import { closeTestRedis, openTestRedis } from "@th/test-stores";
import { afterAll, describe, expect, it, vi } from "vitest";
import { openLeadViewCharge } from "./charge.ts";
import { createLeadViewMeter } from "./index.ts";

const redis = openTestRedis();
afterAll(() => closeTestRedis(redis));

const period = { start: new Date("2026-11-10T00:00:00Z"), end: new Date("2026-12-10T00:00:00Z") };
const day = "2026-11-21";
const meter = createLeadViewMeter(redis, {
  loadUsage: async () => ({ used: 0, foliosToday: [] }),
});
const tenant = () => `ten_${randomBytes(4).toString("hex")}`;
const reserve = (tenantId: string, folios: string[], reservation?: string) =>
  meter.reserve({
    tenantId,
    cap: 10,
    period,
    day,
    folios,
    ...(reservation ? { reservation } : {}),
  });

describe("settling acknowledged lead-view charges", () => {
  it("makes later reads of a settled folio free, recording nothing, though its window is still open", async () => {
    const id = tenant();
    const first = openLeadViewCharge(meter, { tenantId: id, period, day });
    expect(await first.reserve(10, ["a", "b"])).toMatchObject({ charged: ["a", "b"] });
    await first.settle(["a", "b"]);
    const again = await reserve(id, ["a", "b", "c"]);
    expect(again).toMatchObject({ ok: true, charged: ["c"], unsettled: [], remaining: 7 });
  });

  it("leaves another reservation's charge unsettled: a reader cannot settle what it did not charge or record", async () => {
    const id = tenant();
    await reserve(id, ["a"], "owner");
    await meter.settle({ tenantId: id, day, reservation: "intruder", folios: ["a"] });
    expect(await reserve(id, ["a"])).toMatchObject({ charged: [], unsettled: ["a"] });
  });

  it("settles a folio another reader charged once this reader's own view of it is acknowledged", async () => {
    const id = tenant();
    await reserve(id, ["a"], "first");
    const second = openLeadViewCharge(meter, { tenantId: id, period, day });
    expect(await second.reserve(10, ["a"])).toMatchObject({ charged: [], unsettled: ["a"] });
    await second.settle(["a"]);
    expect(await reserve(id, ["a"])).toMatchObject({ charged: [], unsettled: [] });
    // The first reader failing later cannot give the view back: it is recorded by the second.
    expect(
      await meter.release({ tenantId: id, period, day, reservation: "first", folios: ["a"] }),
    ).toBe(0);
  });

  it("cannot be undone by a give-back: a settled charge stays charged", async () => {
    const id = tenant();
    const charge = openLeadViewCharge(meter, { tenantId: id, period, day });
    await charge.reserve(10, ["a"]);
    await charge.settle(["a"]);
    expect(await charge.giveBack(["a"])).toBe(0);
    expect(await meter.remaining({ tenantId: id, cap: 10, period, day })).toBe(9);
  });

  it("sends the settlements and reservations of one turn, across tenants, in one script call, settlements first", async () => {
    const [one, two] = [tenant(), tenant()];
    await reserve(one, ["a", "b"], "r1");
    await reserve(two, ["a"], "r2");
    // The client's own commands, observed on their way to Redis (MONITOR would see them too, but
    // its lines race its own reply on a Redis other tests share, and ioredis then throws).
    const sent = vi.spyOn(redis, "sendCommand");
    let calls: string[];
    try {
      const [, , , reread] = await Promise.all([
        meter.settle({ tenantId: one, day, reservation: "r1", folios: ["a"] }),
        meter.settle({ tenantId: one, day, reservation: "r1", folios: ["b"] }),
        meter.settle({ tenantId: two, day, reservation: "r2", folios: ["a"] }),
        reserve(one, ["a", "c"]),
      ]);
      // The re-read in the same call saw "a" settled: free, nothing to record.
      expect(reread).toMatchObject({ ok: true, charged: ["c"], unsettled: [] });
      calls = sent.mock.calls
        .map(([command]) => command)
        .filter((command) => /^eval/i.test(command.name))
        .map((command) => command.args.map(String).join(" "));
    } finally {
      sent.mockRestore();
    }
    expect(calls.filter((call) => call.includes(one) || call.includes(two))).toHaveLength(1);
    expect(await reserve(one, ["a", "b"])).toMatchObject({ charged: [], unsettled: [] });
    expect(await reserve(two, ["a"])).toMatchObject({ charged: [], unsettled: [] });
  });

  it("answers each reservation of a shared call as a call of its own would, in arrival order", async () => {
    const id = tenant();
    const replies = await Promise.all(
      Array.from({ length: 12 }, () =>
        meter.reserve({ tenantId: id, cap: 10, period, day, folios: ["x", "y"] }),
      ),
    );
    // The first charges both; the others find them charged moments ago by another reservation.
    expect(replies[0]).toMatchObject({ ok: true, charged: ["x", "y"], remaining: 8 });
    for (const reply of replies.slice(1)) {
      expect(reply).toMatchObject({ ok: true, charged: [], unsettled: ["x", "y"], remaining: 8 });
    }
    const capped = await Promise.all(
      ["p", "q", "r", "s", "t", "u", "v", "w", "z"].map((folio) =>
        meter.reserve({ tenantId: id, cap: 10, period, day, folios: [folio] }),
      ),
    );
    expect(capped.filter((reply) => reply.ok)).toHaveLength(8);
    expect(capped.at(-1)).toMatchObject({ ok: false, remaining: 0, needed: 1 });
  });
});
