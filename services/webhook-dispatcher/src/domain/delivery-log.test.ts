import { describe, expect, it } from "vitest";
import {
  type DeliveryRow,
  deliveryCursorOf,
  deliveryPage,
  deliveryView,
  encodeDeliveryCursor,
  isDeliveryId,
  paidBody,
} from "./delivery-log.ts";

const due = new Date("2026-03-01T10:00:00.000Z");
const deadLettered = new Date("2026-02-01T10:00:00.000Z");
const id = "0b6f2f4e-5d7c-4c1e-9a55-3f0e8b2d7c11";

function row(state: DeliveryRow["state"], overrides: Partial<DeliveryRow> = {}): DeliveryRow {
  return {
    id,
    endpoint_id: "we_a",
    watchlist_id: "wl_a",
    match_id: "m_a",
    folio: "123",
    event_type: "match.found",
    state,
    parked_reason: null,
    attempts: 1,
    replay_no: 0,
    due_at: due,
    first_attempted_at: null,
    last_attempted_at: null,
    last_status_code: null,
    last_failure: null,
    last_error: null,
    completed_at: null,
    dead_lettered_at: null,
    dead_letter_reason: null,
    hold_until: null,
    created_at: new Date("2026-01-01T00:00:00.000Z"),
    ...overrides,
  };
}

describe("deliveryView", () => {
  it("shows a waiting delivery's due time as its next attempt", () => {
    for (const state of ["pending", "retrying", "parked"] as const) {
      expect(deliveryView(row(state)).next_attempt_at).toBe(due.toISOString());
    }
  });

  it("shows an exhausted delivery as dead-lettered at its due time, with no next attempt", () => {
    const view = deliveryView(row("exhausted"));
    expect(view.next_attempt_at).toBeNull();
    expect(view.dead_lettered_at).toBe(due.toISOString());
  });

  it("shows a settled delivery with no next attempt and its stored dead-letter time", () => {
    const view = deliveryView(row("dead_letter", { dead_lettered_at: deadLettered }));
    expect(view.next_attempt_at).toBeNull();
    expect(view.dead_lettered_at).toBe(deadLettered.toISOString());
    expect(deliveryView(row("complete")).next_attempt_at).toBeNull();
  });
});

describe("delivery cursors", () => {
  const position = { at: "2026-01-01T00:00:00.123456Z", id };

  it("reads back the position it wrote", () => {
    expect(deliveryCursorOf(encodeDeliveryCursor(position))).toEqual(position);
  });

  it("refuses a position without microseconds, on an impossible date, or with a non-UUID id", () => {
    for (const at of ["2026-01-01T00:00:00.123Z", "2026-02-30T00:00:00.000000Z"]) {
      expect(deliveryCursorOf(encodeDeliveryCursor({ at, id }))).toBeNull();
    }
    expect(deliveryCursorOf(encodeDeliveryCursor({ ...position, id: "d_1" }))).toBeNull();
  });

  it("refuses text that is not an encoded position", () => {
    expect(deliveryCursorOf("not a cursor")).toBeNull();
    expect(deliveryCursorOf(Buffer.from("null").toString("base64url"))).toBeNull();
  });
});

describe("deliveryPage", () => {
  const rows = ["a", "b", "c"].map((n) => ({
    ...row("complete", { id: `${id.slice(0, -1)}${n}` }),
    cursor_at: `2026-01-01T00:00:00.00000${n === "a" ? 3 : n === "b" ? 2 : 1}Z`,
  }));

  it("when a row beyond the limit was read, continues after the page's last row", () => {
    const page = deliveryPage(rows, 2);
    expect(page.data.map((view) => view.id)).toEqual([rows[0]?.id, rows[1]?.id]);
    expect(deliveryCursorOf(page.next_cursor ?? "")).toEqual({
      at: rows[1]?.cursor_at,
      id: rows[1]?.id,
    });
  });

  it("ends when no row beyond the limit was read", () => {
    expect(deliveryPage(rows, 3).next_cursor).toBeNull();
  });
});

describe("isDeliveryId", () => {
  it("accepts a UUID and refuses anything else", () => {
    expect(isDeliveryId(id)).toBe(true);
    expect(isDeliveryId("d_123")).toBe(false);
  });
});

describe("a delivery's payload in its log", () => {
  it("is shown for a delivery that was charged, and withheld for one never charged", () => {
    const body = '{"match":{"owner":{"name":"A. Owner"}}}';
    expect(paidBody({ body, charged_at: new Date("2026-03-01T10:00:00Z") })).toBe(body);
    for (const charged_at of [null, undefined]) {
      expect(paidBody({ body, charged_at })).toBeNull();
    }
  });
});
