import { crc32 } from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  containsKeyLikeString,
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
  KEY_LENGTH,
  lastFour,
  rememberingKeyHasher,
  secretsEqual,
} from "./index.ts";

const pepper = Buffer.alloc(32, 1);

describe("API key format", () => {
  it("is th_live_ followed by a base62 tail of at least 160 random bits and a checksum", () => {
    const key = generateApiKey();
    expect(key).toMatch(/^th_live_[0-9A-Za-z]{38}$/);
    expect(key).toHaveLength(KEY_LENGTH);
    // 32 base62 characters carry log2(62^32) ≈ 190 bits.
    expect(32 * Math.log2(62)).toBeGreaterThanOrEqual(160);
    expect(isWellFormedApiKey(key)).toBe(true);
  });

  it("never repeats across many keys", () => {
    const keys = new Set(Array.from({ length: 10_000 }, generateApiKey));
    expect(keys.size).toBe(10_000);
  });

  it("refuses a key with one character changed, by its checksum, before any lookup", () => {
    const key = generateApiKey();
    const position = 12;
    const swapped = key[position] === "a" ? "b" : "a";
    const typo = `${key.slice(0, position)}${swapped}${key.slice(position + 1)}`;
    expect(isWellFormedApiKey(typo)).toBe(false);
    expect(isWellFormedApiKey(key.slice(0, -1))).toBe(false);
    expect(isWellFormedApiKey(`th_test_${key.slice(8)}`)).toBe(false);
    expect(isWellFormedApiKey("")).toBe(false);
  });

  it("accepts keys issued before, whose checksum is the CRC-32 of the head in six base62 characters", () => {
    const issuedEarlier = [
      "th_live_N7UUL5C5BrTjN4R7r32g0pPHF5RYINi22krV1V",
      "th_live_VOOVPb0HOMBvUeZcT9HwusrpdF8HT2sK1LRX5p",
    ];
    expect(issuedEarlier.every(isWellFormedApiKey)).toBe(true);
    const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    for (let i = 0; i < 2_000; i++) {
      const key = generateApiKey();
      let rest = BigInt(crc32(key.slice(0, -6)));
      let checksum = "";
      while (rest > 0n) {
        checksum = base62[Number(rest % 62n)] + checksum;
        rest /= 62n;
      }
      expect(key.slice(-6)).toBe(checksum.padStart(6, "0"));
    }
  });

  it("is stored as a peppered hash and last4 only", () => {
    const key = generateApiKey();
    const hash = hashApiKey(key, pepper);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hash).not.toContain(key.slice(8));
    expect(hashApiKey(key, Buffer.alloc(32, 2))).not.toBe(hash);
    expect(lastFour(key)).toBe(key.slice(-4));
  });

  it("compares secrets in constant time and only equal secrets match", () => {
    expect(secretsEqual("abc", "abc")).toBe(true);
    expect(secretsEqual("abc", "abd")).toBe(false);
    expect(secretsEqual("abc", "abcd")).toBe(false);
  });

  it("spots key-shaped strings anywhere in a nested value", () => {
    const key = generateApiKey();
    expect(containsKeyLikeString({ a: [{ b: `token=${key}` }] })).toBe(true);
    expect(containsKeyLikeString({ [key]: 1 })).toBe(true);
    expect(containsKeyLikeString({ label: "my th_live key" })).toBe(false);
    expect(containsKeyLikeString(42)).toBe(false);
  });
});

describe("the edge's remembering key hasher", () => {
  it("answers every key with its peppered hash, whether remembered, new or forgotten", () => {
    const hasher = rememberingKeyHasher(pepper, 3);
    const keys = Array.from({ length: 5 }, () => generateApiKey());
    // Twice round five keys with room for three: the second round meets forgotten keys too.
    for (const key of [...keys, ...keys, keys[4] as string, keys[4] as string]) {
      expect(hasher(key)).toBe(hashApiKey(key, pepper));
    }
    const otherPepper = rememberingKeyHasher(Buffer.alloc(32, 2), 3);
    expect(otherPepper(keys[0] as string)).not.toBe(hasher(keys[0] as string));
  });
});
