import { randomBytes } from "node:crypto";
import { contracts } from "@th/contracts";
import { createLeadViewMeter } from "@th/quota";
import { createHttpApp } from "@th/service-kit";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { createLogger } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Config, readConfig } from "../config.ts";
import type { QuotaState } from "./authenticate.ts";
import { createMetering } from "./metering.ts";

let harness: TestHarness<Config>;

beforeAll(async () => {
  harness = await createTestHarness({
    config: readConfig({}),
    migrations: [],
    topics: [contracts.leadViewRecorded],
  });
});
afterAll(() => harness.close());

describe("metering a read", () => {
  it("charges it as of its admission, so a read admitted before the anniversary's midnight counts in that period and on that day", async () => {
    const meter = createLeadViewMeter(harness.redis, {
      loadUsage: async () => ({ used: 0, foliosToday: [] }),
    });
    const metering = createMetering({
      meter,
      bus: harness.bus,
      upgradeUrl: "https://terminal.house/pricing",
    });
    const tenantId = `ten_${randomBytes(4).toString("hex")}`;
    const period = {
      start: new Date("2026-11-21T00:00:00Z"),
      end: new Date("2026-12-21T00:00:00Z"),
    };
    const app = await createHttpApp({
      logger: createLogger({ service: "metering-test", level: "silent" }),
      title: "metering test",
    });
    // The charge runs now, weeks from the admission: only the admission may decide day and period.
    app.get("/read", async (request) => {
      const quota: QuotaState = {
        limit: 10,
        periodStart: period.start,
        resetsAt: period.end,
        admittedAt: Date.parse("2026-12-20T23:59:59.990Z"),
      };
      request.edge = {
        tenancy: { tenantId, memberId: "mem_1", keyId: "key_1", tier: "team" },
        quota,
      };
      await metering.charge(request, ["23-A1"], "rest");
      return { remaining: quota.remaining };
    });
    const response = await app.inject({ method: "GET", url: "/read" });
    expect(response.json()).toEqual({ remaining: 9 });
    expect(await harness.redis.sismember(`th:lv:day:${tenantId}:2026-12-20`, "23-A1")).toBe(1);
    expect(await meter.remaining({ tenantId, cap: 10, period, day: "2026-12-20" })).toBe(9);
    await app.close();
  });
});
