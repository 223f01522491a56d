import { describe, expect, it } from "vitest";
import { matchId } from "./match-id.ts";

const HASH = "9b1d5e0c6f2a4e7b8c3d1a2f4e6b8d0c2a4e6f8b0d2c4e6a8b0c2d4e6f8a0b2c";

describe("matchId", () => {
  it("is the same for the same watchlist, version, folio and content (a redelivery)", () => {
    expect(matchId("wl_1", 3, "23-3059010240130", HASH)).toBe(
      matchId("wl_1", 3, "23-3059010240130", HASH),
    );
  });

  it("is an RFC 9562 version 8 UUID", () => {
    expect(matchId("wl_1", 3, "23-3059010240130", HASH)).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });

  it("never changes its derivation (stored ids must stay valid)", () => {
    expect(matchId("wl_1", 3, "23-3059010240130", HASH)).toBe(
      "080af8d0-a056-80c0-b0c8-f80be1f92cbe",
    );
  });

  it("differs when any input differs", () => {
    const ids = new Set([
      matchId("wl_1", 3, "23-3059010240130", HASH),
      matchId("wl_2", 3, "23-3059010240130", HASH),
      matchId("wl_1", 4, "23-3059010240130", HASH),
      matchId("wl_1", 3, "23-3059010240131", HASH),
      matchId("wl_1", 3, "23-3059010240130", `${HASH.slice(0, -1)}d`),
    ]);
    expect(ids.size).toBe(5);
  });

  it("keeps fields apart: moving characters between inputs changes the id", () => {
    expect(matchId("wl_1", 3, "ab", "c")).not.toBe(matchId("wl_1", 3, "a", "bc"));
    expect(matchId("wl_1", 3, "a|b", "c")).not.toBe(matchId("wl_1", 3, "a", "b|c"));
  });
});
