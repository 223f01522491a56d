import { randomBytes } from "node:crypto";
import { billingPeriodAt } from "@th/billing";
import { tenantChanged } from "@th/contracts/samples";
import { createLeadViewMeter, utcDay } from "@th/quota";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { createEdgeStore } from "./edge-store.ts";

const redis = new Redis("redis://127.0.0.1:6379", {
  keyPrefix: `test:${randomBytes(6).toString("hex")}:`,
});
const store = createEdgeStore(redis, { tenantTtlSeconds: 30 });
const meter = createLeadViewMeter(redis, {
  loadUsage: async () => ({ used: 0, foliosToday: [] }),
});

afterAll(async () => {
  const prefix = redis.options.keyPrefix ?? "";
  const keys = (await redis.keys("*")).map((key) => key.slice(prefix.length));
  if (keys.length > 0) {
    await redis.del(...keys);
  }
  redis.disconnect();
});

async function tenantWithKey(anniversary: string) {
  const tenantId = `ten_${randomBytes(4).toString("hex")}`;
  const keyHash = randomBytes(32).toString("hex");
  await store.putTenant({
    ...tenantChanged,
    tenant_id: tenantId,
    revision: 1,
    billing_anniversary: anniversary,
  });
  await store.putKey(keyHash, { tenantId, memberId: "mem", keyId: "key", revoked: false });
  return { tenantId, keyHash };
}

describe("authorization reads the month's lead-view counter in the same round trip", () => {
  const cases: [string, string][] = [
    ["2026-01-15", "2026-03-20T10:00:00Z"],
    ["2026-01-15", "2026-03-14T23:59:59Z"],
    ["2026-01-31", "2026-02-28T12:00:00Z"],
    ["2026-01-31", "2026-02-27T12:00:00Z"],
    ["2025-12-15", "2026-01-10T08:00:00Z"],
    ["2026-03-31", "2026-04-30T00:00:00Z"],
    ["2026-05-01", "2026-05-01T00:00:00Z"],
  ];
  for (const [anniversary, at] of cases) {
    it(`finds the period of anniversary ${anniversary} at ${at} as billingPeriodAt does`, async () => {
      const { tenantId, keyHash } = await tenantWithKey(anniversary);
      const now = new Date(at);
      const period = billingPeriodAt(new Date(`${anniversary}T00:00:00Z`), now);
      await meter.reserve({
        tenantId,
        cap: 100,
        period,
        day: utcDay(now),
        folios: ["a", "b", "c"],
      });
      const answer = await store.authorize(keyHash, now.getTime());
      expect(answer.kind).toBe("ok");
      expect(answer.kind === "ok" ? answer.leadViewsUsed : null).toBe(3);
    });
  }

  it("reports no figure when the counter is not in Redis, so the meter seeds it", async () => {
    const { keyHash } = await tenantWithKey("2026-01-15");
    const answer = await store.authorize(keyHash, Date.parse("2026-03-20T10:00:00Z"));
    expect(answer.kind === "ok" ? answer.leadViewsUsed : "not ok").toBeUndefined();
  });
});

describe("key records", () => {
  it("never turn a revoked key active again", async () => {
    const { tenantId, keyHash } = await tenantWithKey("2026-01-15");
    await store.markRevoked(keyHash);
    await store.putKey(keyHash, { tenantId, memberId: "mem", keyId: "key", revoked: false });
    expect((await store.authorize(keyHash)).kind).toBe("revoked");
  });

  it("keep the newest tenant snapshot when an older revision arrives late", async () => {
    const { tenantId, keyHash } = await tenantWithKey("2026-01-15");
    await store.putTenant({
      ...tenantChanged,
      tenant_id: tenantId,
      revision: 5,
      tier: "custom",
      billing_anniversary: "2026-01-15",
    });
    await store.putTenant({
      ...tenantChanged,
      tenant_id: tenantId,
      revision: 4,
      tier: "starter",
      billing_anniversary: "2026-01-15",
    });
    const answer = await store.authorize(keyHash);
    expect(answer.kind === "ok" ? answer.tier : null).toBe("custom");
  });
});
