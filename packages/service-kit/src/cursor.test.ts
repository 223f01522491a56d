import { describe, expect, it } from "vitest";
import { isUtcInstant } from "./cursor.ts";

describe("isUtcInstant", () => {
  it("takes the instants a cursor is written with, to the millisecond or the microsecond", () => {
    for (const text of [
      "2026-11-24T09:05:00.123Z",
      "2026-11-24T09:05:00.123456Z",
      "2024-02-29T23:59:59Z",
    ]) {
      expect(isUtcInstant(text), text).toBe(true);
    }
  });

  it("refuses times that do not exist and text that is no instant", () => {
    for (const text of [
      "2026-02-30T00:00:00.000Z",
      "2026-13-01T00:00:00.000Z",
      "2026-11-24T25:61:61.000Z",
      "2025-02-29T00:00:00Z",
      "2026-11-24T09:05:00.1234567Z",
      "2026-11-24 09:05:00Z",
      "2026-11-24T09:05:00+01:00",
    ]) {
      expect(isUtcInstant(text), text).toBe(false);
    }
  });
});
