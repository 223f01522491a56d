import { randomBytes } from "node:crypto";
import { billingPeriodAt } from "@th/billing";
import { tenantChanged } from "@th/contracts/samples";
import { createLeadViewMeter, METER_BATCH_COMMAND, utcDay } from "@th/quota";
import { closeTestRedis, openTestRedis } from "@th/test-stores";
import { afterAll, describe, expect, it } from "vitest";
import { createEdgeStore, EDGE_REDIS_OPTIONS } from "./edge-store.ts";

const redis = openTestRedis();
const batchSizes: number[] = [];
const store = createEdgeStore(redis, {
  tenantTtlSeconds: 30,
  onAuthorizeBatch: (size) => batchSizes.push(size),
});
const meter = createLeadViewMeter(redis, {
  loadUsage: async () => ({ used: 0, foliosToday: [] }),
});

afterAll(() => closeTestRedis(redis));

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

/**
 * The rolling minute as first specified: every request of the minute kept, refused ones too.
 * The store must answer as this log does, with two documented differences: over the cap,
 * X-RateLimit-Reset is when the limit-th newest request leaves (when one more fits), not when
 * the oldest does; and a request stamped earlier than the newest one counted is counted at the
 * newest one's time.
 */
function referenceWindow(limit: number) {
  const log: number[] = [];
  let newest = Number.NEGATIVE_INFINITY;
  return (now: number) => {
    const live = log.filter((at) => at > now - 60_000);
    newest = Math.max(newest, now);
    log.length = 0;
    log.push(...live, newest);
    const sorted = [...log].sort((a, b) => a - b);
    const count = sorted.length;
    const allowed = count - 1 < limit;
    const limitThNewest = sorted[Math.max(0, count - limit)] as number;
    return {
      allowed,
      remaining: Math.max(0, limit - count),
      retryAtMs: allowed ? 0 : limitThNewest + 60_000,
      resetAtMs: (count > limit ? limitThNewest : (sorted[0] as number)) + 60_000,
    };
  };
}

/** A small deterministic generator, so a failure replays. */
function sequence(seed: number) {
  let state = seed;
  return (below: number) => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state % below;
  };
}

async function tenantWithLimit(limit: number) {
  const tenantId = `ten_${randomBytes(4).toString("hex")}`;
  const keys = [randomBytes(32).toString("hex"), randomBytes(32).toString("hex")];
  await store.putTenant({
    ...tenantChanged,
    tenant_id: tenantId,
    revision: 1,
    limits: { ...tenantChanged.limits, rate_per_minute: limit },
  });
  for (const [index, keyHash] of keys.entries()) {
    await store.putKey(keyHash, {
      tenantId,
      memberId: "mem",
      keyId: `key${index}`,
      revoked: false,
    });
  }
  return { tenantId, keys: keys as [string, string] };
}

/** The tenant's keys in turn. */
function alternate(keys: [string, string], i: number): string {
  return i % 2 === 0 ? keys[0] : keys[1];
}

async function windowAt(keyHash: string, now: number) {
  const answer = await store.authorize(keyHash, now);
  if (answer.kind !== "ok") {
    throw new Error(`authorization answered ${answer.kind}`);
  }
  return answer.window;
}

describe("the tenant's rolling minute", () => {
  const start = Date.parse("2026-03-20T10:00:00Z");

  it("lets a request in exactly 60 s after the minute's oldest request, not a millisecond earlier", async () => {
    const answers = [];
    for (const offset of [59_999, 60_000]) {
      const { keys } = await tenantWithLimit(3);
      for (let i = 0; i < 3; i++) {
        expect((await windowAt(keys[0], start)).allowed).toBe(true);
      }
      answers.push(await windowAt(keys[1], start + offset));
    }
    expect(answers[0]).toMatchObject({
      allowed: false,
      remaining: 0,
      retryAtMs: start + 60_000,
      resetAtMs: start + 60_000,
    });
    expect(answers[1]).toMatchObject({ allowed: true, remaining: 2, resetAtMs: start + 120_000 });
  });

  it("is shared by all keys of a tenant", async () => {
    const { keys } = await tenantWithLimit(4);
    const answers = [];
    for (let i = 0; i < 6; i++) {
      answers.push(await windowAt(alternate(keys, i), start + i));
    }
    expect(answers.map((window) => window.allowed)).toEqual([true, true, true, true, false, false]);
    expect(answers.map((window) => window.remaining)).toEqual([3, 2, 1, 0, 0, 0]);
  });

  it("counts refusals, so retrying during the cool-down pushes the retry time out", async () => {
    const { keys } = await tenantWithLimit(5);
    for (let i = 0; i < 5; i++) {
      await windowAt(keys[0], start);
    }
    const first = await windowAt(keys[1], start + 1_000);
    expect(first.retryAtMs).toBe(start + 60_000);
    for (let i = 0; i < 5; i++) {
      await windowAt(keys[1], start + 30_000);
    }
    // The first five left at 60 s, but the refusals of 1 s and 30 s still fill the minute.
    const later = await windowAt(keys[0], start + 61_000);
    expect(later).toMatchObject({ allowed: false, retryAtMs: start + 90_000 });
    expect((await windowAt(keys[0], start + 90_000)).allowed).toBe(true);
  });

  it("answers as the full log of the minute would, for bursts, pauses and late arrivals", async () => {
    const random = sequence(20_260_320);
    for (const limit of [1, 3, 7, 40]) {
      const { keys } = await tenantWithLimit(limit);
      const reference = referenceWindow(limit);
      let clock = start;
      for (let i = 0; i < 600; i++) {
        const step = random(10);
        // Mostly bursts within a millisecond or a few, sometimes long pauses, and now and then a
        // request stamped a little earlier than the last one (another gateway's clock).
        clock += step < 5 ? random(3) : step < 9 ? random(4_000) : 30_000 + random(40_000);
        const at = random(20) === 0 ? clock - random(500) : clock;
        const expected = reference(at);
        const window = await windowAt(alternate(keys, i), at);
        expect(
          {
            allowed: window.allowed,
            remaining: window.remaining,
            retryAtMs: window.retryAtMs,
            resetAtMs: window.resetAtMs,
          },
          `limit ${limit}, request ${i} at +${at - start} ms`,
        ).toEqual(expected);
      }
    }
  });

  it("judges requests that arrive together in one script call, in arrival order, as the full log would", async () => {
    const random = sequence(20_261_122);
    const calls = batchSizes.length;
    let requests = 0;
    for (const limit of [1, 3, 7, 40]) {
      const { keys } = await tenantWithLimit(limit);
      const reference = referenceWindow(limit);
      let clock = start;
      for (let burst = 0; burst < 40; burst++) {
        clock += random(4) === 0 ? 30_000 + random(40_000) : random(4_000);
        const times: number[] = [];
        const size = 1 + random(30);
        for (let i = 0; i < size; i++) {
          clock += random(3);
          times.push(random(20) === 0 ? clock - random(500) : clock);
        }
        const expected = times.map((at) => reference(at));
        const windows = await Promise.all(times.map((at, i) => windowAt(alternate(keys, i), at)));
        expect(
          windows.map((window) => ({
            allowed: window.allowed,
            remaining: window.remaining,
            retryAtMs: window.retryAtMs,
            resetAtMs: window.resetAtMs,
          })),
          `limit ${limit}, burst ${burst}`,
        ).toEqual(expected);
        requests += size;
      }
    }
    // Each burst went to Redis as one call.
    expect(batchSizes.length - calls).toBe(160);
    expect(batchSizes.slice(calls).reduce((sum, size) => sum + size, 0)).toBe(requests);
  });

  it("answers every kind of key in one script call: several tenants, unknown, revoked, missing, cancelled and unreadable records", async () => {
    const first = await tenantWithLimit(2);
    const second = await tenantWithLimit(50);
    const cancelled = await tenantWithLimit(50);
    await store.putTenant({
      ...tenantChanged,
      tenant_id: cancelled.tenantId,
      revision: 2,
      status: "cancelled",
    });
    const unreadable = await tenantWithLimit(50);
    await redis.hset(`th:tenant:${unreadable.tenantId}`, "rate_per_minute", "lots");
    const unknownKey = randomBytes(32).toString("hex");
    await store.putUnknown(unknownKey);
    const revokedKey = randomBytes(32).toString("hex");
    await store.markRevoked(revokedKey, { tenantId: second.tenantId, memberId: "m", keyId: "r" });
    const uncachedKey = randomBytes(32).toString("hex");
    const orphanKey = randomBytes(32).toString("hex");
    await store.putKey(orphanKey, {
      tenantId: "ten_never_cached",
      memberId: "m",
      keyId: "o",
      revoked: false,
    });

    const at = start + 5_000;
    const calls = batchSizes.length;
    const answers = await Promise.all([
      store.authorize(first.keys[0], at),
      store.authorize(unknownKey, at),
      store.authorize(second.keys[0], at),
      store.authorize(first.keys[1], at),
      store.authorize(revokedKey, at),
      store.authorize(cancelled.keys[0], at),
      store.authorize(uncachedKey, at),
      store.authorize(unreadable.keys[0], at),
      store.authorize(orphanKey, at),
      store.authorize(first.keys[0], at),
      store.authorize(second.keys[1], at),
    ]);
    expect(batchSizes.slice(calls)).toEqual([11]);
    const summary = answers.map((answer) =>
      answer.kind === "ok"
        ? `${answer.tenantId === first.tenantId ? "first" : "second"} ${answer.window.allowed} ${answer.window.remaining}`
        : answer.kind,
    );
    expect(summary).toEqual([
      "first true 1",
      "unknown",
      "second true 49",
      "first true 0",
      "revoked",
      "inactive",
      "miss",
      "miss",
      "miss",
      "first false 0",
      "second true 48",
    ]);
  });

  it("asks for a background refresh once the tenant's record is in the last third of its time", async () => {
    const { tenantId, keys } = await tenantWithLimit(100);
    const fresh = await store.authorize(keys[0], start);
    expect(fresh).toMatchObject({ kind: "ok", refreshDue: false });
    // The store keeps tenant records 30 s; below 10 s left the answer asks for a refresh.
    await redis.pexpire(`th:tenant:${tenantId}`, 9_000);
    expect(await store.authorize(keys[1], start)).toMatchObject({ kind: "ok", refreshDue: true });
    await redis.pexpire(`th:tenant:${tenantId}`, 11_000);
    expect(await store.authorize(keys[0], start)).toMatchObject({ kind: "ok", refreshDue: false });
  });

  it("splits a burst larger than one call's share into several calls, in order", async () => {
    const { keys } = await tenantWithLimit(1_000);
    const calls = batchSizes.length;
    const windows = await Promise.all(
      Array.from({ length: 1_200 }, (_, i) => windowAt(alternate(keys, i), start + 1_000)),
    );
    expect(batchSizes.slice(calls)).toEqual([512, 512, 176]);
    expect(windows.map((window) => window.remaining)).toEqual(
      Array.from({ length: 1_200 }, (_, i) => Math.max(0, 999 - i)),
    );
    expect(windows.filter((window) => window.allowed)).toHaveLength(1_000);
  });

  it("keeps no more buckets than the cap, however hard the tenant retries", async () => {
    const { tenantId, keys } = await tenantWithLimit(10);
    for (let i = 0; i < 500; i++) {
      await windowAt(keys[0], start + i * 7);
    }
    expect(await redis.zcard(`th:rlt:${tenantId}`)).toBeLessThanOrEqual(10);
  });

  it("keeps one bucket per millisecond however large the cap", async () => {
    const { tenantId, keys } = await tenantWithLimit(100_000_000);
    for (let i = 0; i < 1_000; i++) {
      await windowAt(alternate(keys, i), start + Math.floor(i / 100));
    }
    expect(await redis.zcard(`th:rlt:${tenantId}`)).toBe(10);
    expect((await windowAt(keys[0], start + 10)).remaining).toBe(100_000_000 - 1_001);
  });

  it("starts afresh once a whole minute has passed without requests", async () => {
    const { tenantId, keys } = await tenantWithLimit(2);
    for (let i = 0; i < 5; i++) {
      await windowAt(keys[0], start + i);
    }
    const fresh = await windowAt(keys[1], start + 70_000);
    expect(fresh).toMatchObject({ allowed: true, remaining: 1, resetAtMs: start + 130_000 });
    expect(await redis.zcard(`th:rlt:${tenantId}`)).toBe(1);
  });
});

describe("the per-IP rolling minute", () => {
  it("counts, refuses and resets as the tenant's does", async () => {
    const ip = `192.0.2.${randomBytes(1)[0]}`;
    const start = Date.parse("2026-03-20T10:00:00Z");
    const answers = [];
    for (let i = 0; i < 4; i++) {
      answers.push(await store.limitIp("authfail", ip, 3, start + i * 1_000));
    }
    expect(answers.map((window) => window.allowed)).toEqual([true, true, true, false]);
    // The refusal at 3 s counts: when the request of 0 s leaves, the minute is still full.
    expect(answers[3]).toMatchObject({ remaining: 0, retryAtMs: start + 61_000, limit: 3 });
    expect((await store.limitIp("authfail", ip, 3, start + 61_000)).allowed).toBe(true);
  });
});

describe("the edge's Redis connection", () => {
  it("sends the key-check and lead-view batches as they come, not through the auto-pipeline", async () => {
    const edge = redis.duplicate(EDGE_REDIS_OPTIONS);
    try {
      createEdgeStore(edge, { tenantTtlSeconds: 30 });
      createLeadViewMeter(edge, {
        loadUsage: async () => ({ used: 0, foliosToday: [] }),
      });
      await edge.ping();
      const commands = edge as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
      // A command the pipeline takes waits in its queue until the next turn of the event loop.
      const ping = edge.ping();
      expect(edge.autoPipelineQueueSize).toBe(1);
      await ping;
      const batch = commands[METER_BATCH_COMMAND]?.(1, "th:lv:used:x", "1", "1", "0");
      const keyCheck = commands.thAuthorizeBatch?.(0, "th:", "2026 1 1 31 31", "1000");
      expect(edge.autoPipelineQueueSize).toBe(0);
      await Promise.all([batch, keyCheck]);
    } finally {
      edge.disconnect();
    }
  });
});
