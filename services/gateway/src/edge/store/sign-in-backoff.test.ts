import { randomBytes } from "node:crypto";
import { closeTestRedis, openTestRedis } from "@th/test-stores";
import { afterAll, describe, expect, it } from "vitest";
import { signInAccountKey, signInBackoffPolicy } from "../../domain/sign-in-accounts.ts";
import { createEdgeStore } from "../edge-store.ts";

const redis = openTestRedis();
const store = createEdgeStore(redis, { tenantTtlSeconds: 30 });
const policy = signInBackoffPolicy({ freeAttempts: 5, longestLockSeconds: 900 });
const T0 = Date.parse("2026-03-20T10:00:00Z");

afterAll(() => closeTestRedis(redis));

const account = () => signInAccountKey(`victim-${randomBytes(4).toString("hex")}@acme.test`);

/** Failed attempts made as soon as each is allowed; the lock each one set, in ms after T0. */
async function failEachAsSoonAsAllowed(key: string, count: number): Promise<number[]> {
  const locks: number[] = [];
  let now = T0;
  for (let i = 0; i < count; i++) {
    const attempt = await store.beginSignIn(key, now, policy);
    expect(attempt.allowed).toBe(true);
    locks.push(attempt.lockedUntilMs === 0 ? 0 : attempt.lockedUntilMs - now);
    now = Math.max(now, attempt.lockedUntilMs);
  }
  return locks;
}

describe("an account's failed sign-ins", () => {
  it("are free four times, then lock the account 1 s, doubling with each failure up to 15 minutes", async () => {
    const locks = await failEachAsSoonAsAllowed(account(), 17);
    expect(locks).toEqual([
      0, 0, 0, 0, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 512_000,
      900_000, 900_000, 900_000,
    ]);
  });

  it("refuse every attempt while locked without counting it, so hammering neither tests a password nor lengthens the lock", async () => {
    const key = account();
    await failEachAsSoonAsAllowed(key, 5);
    for (let i = 0; i < 50; i++) {
      expect(await store.beginSignIn(key, T0 + 999, policy)).toEqual({
        allowed: false,
        lockedUntilMs: T0 + 1_000,
      });
    }
    const next = await store.beginSignIn(key, T0 + 1_000, policy);
    expect(next).toEqual({ allowed: true, lockedUntilMs: T0 + 3_000 });
  });

  it("let only one of many attempts sent at once past the fifth failure check a password", async () => {
    const key = account();
    await failEachAsSoonAsAllowed(key, 4);
    const attempts = await Promise.all(
      Array.from({ length: 20 }, () => store.beginSignIn(key, T0 + 10, policy)),
    );
    expect(attempts.filter((attempt) => attempt.allowed)).toHaveLength(1);
  });

  it("are forgotten after a success, and by themselves after a quiet day", async () => {
    const key = account();
    await failEachAsSoonAsAllowed(key, 8);
    await store.signInSucceeded(key);
    expect(await store.beginSignIn(key, T0 + 1, policy)).toEqual({
      allowed: true,
      lockedUntilMs: 0,
    });
    const ttl = await redis.pttl(`th:signin:${key}`);
    expect(ttl).toBeGreaterThan(86_000_000);
    expect(ttl).toBeLessThanOrEqual(86_400_000);
  });

  it("are counted for one normal form of the email, so case and spacing open no second window", () => {
    expect(signInAccountKey(" Victim@ACME.test ")).toBe(signInAccountKey("victim@acme.test"));
    expect(signInAccountKey("victim@acme.test")).not.toBe(signInAccountKey("victim2@acme.test"));
    expect(signInAccountKey("victim@acme.test")).toMatch(/^[0-9a-f]{64}$/);
  });
});
