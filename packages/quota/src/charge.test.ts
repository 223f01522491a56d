import { describe, expect, it } from "vitest";
import { foliosToRecord, openLeadViewCharge } from "./charge.ts";
import type { LeadViewMeter } from "./index.ts";

const scope = {
  tenantId: "ten_1",
  period: { start: new Date("2026-11-21T00:00:00Z"), end: new Date("2026-12-21T00:00:00Z") },
  day: "2026-12-01",
};

/** A meter that answers from a script and keeps what it was asked. */
function scriptedMeter(replies: (() => Promise<unknown>)[]) {
  const reserved: { reservation?: string; folios: readonly string[] }[] = [];
  const released: { reservation: string; folios: readonly string[] }[] = [];
  const meter = {
    reserve: async (input: { reservation?: string; folios: readonly string[] }) => {
      reserved.push(input);
      const reply = replies.shift();
      if (!reply) {
        throw new Error("no reply scripted");
      }
      return reply();
    },
    release: async (input: { reservation: string; folios: readonly string[] }) => {
      released.push(input);
      return input.folios.length;
    },
  } as unknown as LeadViewMeter;
  return { meter, reserved, released };
}

describe("a lead-view charge", () => {
  it("asks every reservation of one charge under the same name", async () => {
    const refused = async () => ({ ok: false, remaining: 1, needed: 2 });
    const granted = async () => ({ ok: true, charged: ["a"], unsettled: [], remaining: 0 });
    const { meter, reserved } = scriptedMeter([refused, granted]);
    const charge = openLeadViewCharge(meter, scope);
    await charge.reserve(5, ["a", "b"]);
    await charge.reserve(5, ["a"]);
    expect(reserved.map((call) => call.reservation)).toEqual([
      charge.reservation,
      charge.reservation,
    ]);
  });

  it("gives back everything it asked for when a reservation fails (its reply may have been lost), then fails", async () => {
    const refused = async () => ({ ok: false, remaining: 1, needed: 2 });
    const granted = async () => ({ ok: true, charged: ["a"], unsettled: [], remaining: 0 });
    const lost = async () => {
      throw new Error("connection reset");
    };
    const { meter, released } = scriptedMeter([refused, granted, lost]);
    const charge = openLeadViewCharge(meter, scope);
    await charge.reserve(5, ["a", "b"]);
    await charge.reserve(5, ["a"]);
    await expect(charge.reserve(5, ["b"])).rejects.toThrow("connection reset");
    expect(released).toEqual([
      expect.objectContaining({ reservation: charge.reservation, folios: ["a", "b"] }),
    ]);
  });

  it("gives back only under its own reservation", async () => {
    const { meter, released } = scriptedMeter([]);
    const charge = openLeadViewCharge(meter, scope);
    expect(await charge.giveBack(["a", "c"])).toBe(2);
    expect(released).toEqual([{ ...scope, reservation: charge.reservation, folios: ["a", "c"] }]);
  });

  it("records a view for each folio it charged and each another reader may still give back", () => {
    expect(
      foliosToRecord({
        ok: true,
        reservation: "r",
        charged: ["a", "b"],
        unsettled: ["c"],
        remaining: 3,
      }),
    ).toEqual(["a", "b", "c"]);
  });

  it("dates each view with the charge's day and billing period, whoever read it", () => {
    const { meter } = scriptedMeter([]);
    const charge = openLeadViewCharge(meter, scope);
    expect(
      charge.view("23-A1", {
        surface: "webhook",
        request_id: "d_1",
        key_id: null,
        member_id: null,
        recorded_at: "2026-12-01T10:00:00.000Z",
      }),
    ).toEqual({
      tenant_id: "ten_1",
      folio: "23-A1",
      day: "2026-12-01",
      billing_period_start: "2026-11-21",
      surface: "webhook",
      request_id: "d_1",
      key_id: null,
      member_id: null,
      recorded_at: "2026-12-01T10:00:00.000Z",
    });
  });
});
