// A request's further calls against the same rolling minute the edge's authorization charges,
// on real Redis: each call counts like a request of its own, and the first ones fit.
import { randomBytes } from "node:crypto";
import { tenantChanged } from "@th/contracts/samples";
import { closeTestRedis, openTestRedis } from "@th/test-stores";
import { afterAll, describe, expect, it } from "vitest";
import { createEdgeStore } from "../edge-store.ts";
import { tenantCalls } from "./tenant-calls.ts";

const redis = openTestRedis();
const store = createEdgeStore(redis, { tenantTtlSeconds: 30 });
const calls = tenantCalls(redis);
const NOW = Date.parse("2026-03-20T10:00:00Z");

afterAll(() => closeTestRedis(redis));

/** A tenant allowed `limit` requests a minute, and one key of it. */
async function tenant(limit: number) {
  const tenantId = `ten_${randomBytes(4).toString("hex")}`;
  const keyHash = randomBytes(32).toString("hex");
  await store.putTenant({
    ...tenantChanged,
    tenant_id: tenantId,
    revision: 1,
    limits: { ...tenantChanged.limits, rate_per_minute: limit },
  });
  await store.putKey(keyHash, { tenantId, memberId: "mem", keyId: "key", revoked: false });
  return { tenantId, keyHash };
}

describe("further calls of a request in its tenant's rolling minute", () => {
  it("count as requests of the same minute the key's requests fill, in order", async () => {
    const { tenantId, keyHash } = await tenant(10);
    const first = await store.authorize(keyHash, NOW);
    expect(first.kind === "ok" && first.window.remaining).toBe(9);
    const charged = await calls.chargeCalls(tenantId, 10, 4, NOW + 10);
    expect(charged.allowed).toBe(4);
    expect(charged.window).toMatchObject({ limit: 10, count: 5, remaining: 5, allowed: true });
    // The oldest call of the minute is the key's request: the minute frees a call then.
    expect(charged.window.resetAtMs).toBe(NOW + 60_000);
    const next = await store.authorize(keyHash, NOW + 20);
    expect(next.kind === "ok" && next.window.count).toBe(6);
  });

  it("allow the first calls that fit and refuse the rest, counting the refused ones too", async () => {
    const { tenantId, keyHash } = await tenant(5);
    await store.authorize(keyHash, NOW);
    await store.authorize(keyHash, NOW + 1);
    const charged = await calls.chargeCalls(tenantId, 5, 6, NOW + 2);
    expect(charged.allowed).toBe(3);
    expect(charged.window).toMatchObject({ remaining: 0, allowed: false });
    expect(charged.window.count).toBeGreaterThan(5);
    expect(charged.window.retryAtMs).toBeGreaterThan(NOW);
    const after = await store.authorize(keyHash, NOW + 3);
    expect(after.kind === "ok" && after.window.allowed).toBe(false);
  });
});
