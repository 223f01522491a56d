import { describe, expect, it } from "vitest";
import type { QuotaState } from "./edge-context.ts";
import type { RateWindow } from "./edge-store.ts";
import { clientLimitHeaders, tenantLimitHeaders, tenantlessHeaders } from "./limit-headers.ts";

const NOW = Date.parse("2026-03-20T10:00:00.750Z");
const WINDOW: RateWindow = {
  limit: 600,
  count: 41,
  remaining: 559,
  resetAtMs: Date.parse("2026-03-20T10:00:31.200Z"),
  allowed: true,
  retryAtMs: 0,
};
const PERIOD = {
  periodStart: new Date("2026-03-14T00:00:00Z"),
  resetsAt: new Date("2026-04-14T00:00:00Z"),
  admittedAt: NOW,
};
const iso = (date: Date) => date.toISOString();

describe("a tenant's six limit headers", () => {
  it("carry the rolling minute, its reset rounded up to the second, and the month's lead-views", () => {
    const quota: QuotaState = { limit: 5_000, remaining: 4_321, ...PERIOD };
    expect(tenantLimitHeaders(WINDOW, quota, iso)).toEqual({
      "x-ratelimit-limit": "600",
      "x-ratelimit-remaining": "559",
      "x-ratelimit-reset": String(Date.parse("2026-03-20T10:00:32Z") / 1000),
      "x-quota-lead-views-limit": "5000",
      "x-quota-lead-views-remaining": "4321",
      "x-quota-resets": "2026-04-14T00:00:00.000Z",
    });
  });

  it("say the whole cap remains while the counter is unknown, and never a negative figure", () => {
    const unknown: QuotaState = { limit: 5_000, ...PERIOD };
    const overdrawn: QuotaState = { limit: 5_000, remaining: -3, ...PERIOD };
    expect(tenantLimitHeaders(WINDOW, unknown, iso)["x-quota-lead-views-remaining"]).toBe("5000");
    expect(tenantLimitHeaders(WINDOW, overdrawn, iso)["x-quota-lead-views-remaining"]).toBe("0");
  });
});

describe("the six limit headers without a tenant", () => {
  it("carry the client's window where one applied, and no quota", () => {
    expect(clientLimitHeaders(WINDOW, NOW)).toEqual({
      "x-ratelimit-limit": "600",
      "x-ratelimit-remaining": "559",
      "x-ratelimit-reset": String(Date.parse("2026-03-20T10:00:32Z") / 1000),
      "x-quota-lead-views-limit": "0",
      "x-quota-lead-views-remaining": "0",
      "x-quota-resets": "2026-03-20T10:00:00.000Z",
    });
  });

  it("say nothing is metered, with the current second as every time, where no window applied", () => {
    const expected = {
      "x-ratelimit-limit": "0",
      "x-ratelimit-remaining": "0",
      "x-ratelimit-reset": String(Date.parse("2026-03-20T10:00:00Z") / 1000),
      "x-quota-lead-views-limit": "0",
      "x-quota-lead-views-remaining": "0",
      "x-quota-resets": "2026-03-20T10:00:00.000Z",
    };
    expect(clientLimitHeaders(undefined, NOW)).toEqual(expected);
    expect(tenantlessHeaders(NOW)).toEqual(expected);
  });
});
