import { describe, expect, it } from "vitest";
import { ledgerUsageLoader } from "./ledger-seed.ts";

const period = { start: new Date("2026-11-14T00:00:00Z"), end: new Date("2026-12-14T00:00:00Z") };

function loaderAnswering(status: number, body: unknown, asked: string[] = []) {
  return ledgerUsageLoader({
    get: async (path) => {
      asked.push(path);
      return { status, body };
    },
    unavailable: (detail) => new Error(`unavailable: ${detail}`),
  });
}

describe("the ledger's seed answer", () => {
  it("asks for the tenant's period and day and answers its figures", async () => {
    const asked: string[] = [];
    const load = loaderAnswering(200, { used: 7, folios_today: ["23-1"], caught_up: true }, asked);
    expect(await load("t/1", period, "2026-11-27")).toEqual({ used: 7, foliosToday: ["23-1"] });
    expect(asked).toEqual(["/internal/v1/usage/t%2F1/seed?period_start=2026-11-14&day=2026-11-27"]);
  });

  it("is unavailable when the ledger does not answer 200", async () => {
    await expect(loaderAnswering(503, undefined)("t1", period, "2026-11-27")).rejects.toThrow(
      "unavailable: lead-view usage is unavailable",
    );
  });

  it("is unavailable while the ledger has not caught up, rather than give views away", async () => {
    const behind = { used: 3, folios_today: [], caught_up: false };
    await expect(loaderAnswering(200, behind)("t1", period, "2026-11-27")).rejects.toThrow(
      "unavailable: lead-view usage is being recovered",
    );
  });
});
