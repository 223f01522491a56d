import { describe, expect, it } from "vitest";
import { REFRESH_REUSE_GRACE_MS, type RefreshState, refreshOutcome } from "./sessions.ts";

const NOW = new Date("2026-11-01T10:00:00Z");
const later = (ms: number) => new Date(NOW.getTime() + ms);
const open = { endedAt: null, expiresAt: later(3_600_000), epoch: 2 };
const state = (overrides: Partial<RefreshState>): RefreshState => ({
  session: open,
  memberEpoch: 2,
  token: { usedAt: null },
  ...overrides,
});

describe("a refresh", () => {
  it("with the session's current token spends it and issues the next", () => {
    expect(refreshOutcome(state({}), NOW)).toBe("rotate");
  });

  it("with a token spent a moment ago (tabs refreshing together) gets an access token only", () => {
    const token = { usedAt: later(-REFRESH_REUSE_GRACE_MS) };
    expect(refreshOutcome(state({ token }), NOW)).toBe("grace");
  });

  it("with a token spent before the grace, or never issued by the session, is a reuse", () => {
    const token = { usedAt: later(-REFRESH_REUSE_GRACE_MS - 1) };
    expect(refreshOutcome(state({ token }), NOW)).toBe("reuse");
    expect(refreshOutcome(state({ token: null }), NOW)).toBe("reuse");
  });

  it("of a session that is over finds it ended, whatever the token", () => {
    const ended = [
      state({ session: null }),
      state({ session: { ...open, endedAt: later(-1) } }),
      state({ session: { ...open, expiresAt: NOW } }),
      state({ memberEpoch: null }),
      state({ memberEpoch: 3 }),
      state({ session: { ...open, endedAt: later(-1) }, token: { usedAt: later(-60_000) } }),
    ];
    for (const each of ended) {
      expect(refreshOutcome(each, NOW)).toBe("ended");
    }
  });
});
