import { describe, expect, it } from "vitest";
import {
  decodeCursor,
  decodeVersionCursor,
  encodeCursor,
  encodeVersionCursor,
} from "./list-cursor.ts";

describe("listing cursors", () => {
  it("round-trip, and only under the sort they were issued for", () => {
    const cursor = { sort: "-updated_at" as const, value: "2026-11-21T12:00:00.000Z", id: "pli_x" };
    const text = encodeCursor(cursor);
    expect(decodeCursor(text, "-updated_at")).toEqual(cursor);
    expect(decodeCursor(text, "updated_at")).toBeUndefined();
  });

  it("refuse forged values: a date that does not exist, an id too long, not JSON", () => {
    const forge = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
    expect(
      decodeCursor(forge(["-updated_at", "2026-02-30T00:00:00Z", "a"]), "-updated_at"),
    ).toBeUndefined();
    expect(
      decodeCursor(forge(["-updated_at", "2026-02-03T00:00:00Z", "a".repeat(65)]), "-updated_at"),
    ).toBeUndefined();
    expect(
      decodeCursor(forge(["follow_up_on", "'; DROP TABLE items", "a"]), "follow_up_on"),
    ).toBeUndefined();
    expect(decodeCursor(forge(["follow_up_on", "infinity", "a"]), "follow_up_on")).toBeDefined();
    expect(decodeCursor("not base64 json", "-updated_at")).toBeUndefined();
    expect(decodeVersionCursor(encodeVersionCursor(12))).toBe(12);
    expect(decodeVersionCursor(Buffer.from("v-1").toString("base64url"))).toBeUndefined();
  });
});
