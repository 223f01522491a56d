import {
  createHmac,
  createSecretKey,
  hash,
  type KeyObject,
  randomBytes,
  timingSafeEqual,
} from "node:crypto";
import { crc32 } from "node:zlib";

/**
 * `th_live_` + 32 base62 characters of randomness (190 bits) + 6 base62 characters of CRC-32 over
 * everything before them. The checksum lets the edge refuse a mistyped or made-up key without a
 * lookup, and the fixed prefix lets secret scanners find leaked keys with few false positives.
 */
export const KEY_PREFIX = "th_live_";
const BODY_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
export const KEY_LENGTH = KEY_PREFIX.length + BODY_LENGTH + CHECKSUM_LENGTH;
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const KEY_SHAPE = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${BODY_LENGTH + CHECKSUM_LENGTH}}$`);

/** Anything that starts like one of our keys, so a key pasted into a URL or body is caught. */
export const KEY_LIKE = /th_live_[0-9A-Za-z]{8,}/;

function toBase62(value: bigint, length: number): string {
  let text = "";
  let rest = value;
  while (rest > 0n) {
    text = BASE62[Number(rest % 62n)] + text;
    rest /= 62n;
  }
  return text.padStart(length, "0").slice(-length);
}

/** The CRC-32 is below 2^32, so plain number arithmetic is exact; BigInt would cost more per request. */
function checksumOf(head: string): string {
  let rest = crc32(head);
  let text = "";
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    text = BASE62[rest % 62] + text;
    rest = Math.floor(rest / 62);
  }
  return text;
}

export function generateApiKey(): string {
  // 24 random bytes are more than the 190 bits 32 base62 characters can carry; the excess is cut.
  const body = toBase62(BigInt(`0x${randomBytes(24).toString("hex")}`), BODY_LENGTH);
  const head = `${KEY_PREFIX}${body}`;
  return `${head}${checksumOf(head)}`;
}

/** True when the string has our key's shape and its checksum holds. */
export function isWellFormedApiKey(candidate: string): boolean {
  if (!KEY_SHAPE.test(candidate)) {
    return false;
  }
  // The checksum follows from the key's own characters and guards no secret, so a plain
  // comparison leaks nothing; the secret part is only ever compared as a peppered hash.
  return checksumOf(candidate.slice(0, -CHECKSUM_LENGTH)) === candidate.slice(-CHECKSUM_LENGTH);
}

/** The stored form: HMAC-SHA-256 under a server pepper, so a leaked table cannot be brute-forced offline. */
export function hashApiKey(key: string, pepper: Buffer | KeyObject): string {
  return createHmac("sha256", pepper).update(key).digest("hex");
}

/**
 * `hashApiKey` remembered for the most recently seen keys (first in, first out), for the edge,
 * which hashes the same few keys on every request: the HMAC costs about 2 µs, a lookup under a
 * plain SHA-256 of the key about 0.4 µs. The memory is indexed by that SHA-256 rather than by
 * the key itself, so it holds no secret; revocation is unaffected, as the hash of a key never
 * changes and the key's state is looked up under it every time.
 */
export function rememberingKeyHasher(
  pepper: Buffer | KeyObject,
  capacity: number,
): (key: string) => string {
  const remembered = new Map<string, string>();
  return (key) => {
    const index = hash("sha256", key, "base64");
    const known = remembered.get(index);
    if (known !== undefined) {
      return known;
    }
    const keyHash = hashApiKey(key, pepper);
    if (remembered.size >= capacity) {
      const oldest = remembered.keys().next();
      if (!oldest.done) {
        remembered.delete(oldest.value);
      }
    }
    remembered.set(index, keyHash);
    return keyHash;
  };
}

/** A pepper and its version, as a stored hash records it (decision 0345). */
export interface VersionedPepper {
  version: number;
  key: Buffer | KeyObject;
}

/** The key's hash under each of these peppers, in their order: the stored forms it may have. */
export function keyHashes(
  key: string,
  peppers: readonly VersionedPepper[],
): { version: number; hash: string }[] {
  return peppers.map((pepper) => ({ version: pepper.version, hash: hashApiKey(key, pepper.key) }));
}

/** The pepper as a key object, built once: rebuilding it per request costs more than the HMAC. */
export function pepperKey(pepper: Buffer): KeyObject {
  return createSecretKey(pepper);
}

export function lastFour(key: string): string {
  return key.slice(-4);
}

/** Compares two secrets in time independent of where they differ. */
export function secretsEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** True when a key-shaped string appears anywhere in the value (strings, arrays, objects). */
export function containsKeyLikeString(value: unknown, depth = 0): boolean {
  if (typeof value === "string") {
    return KEY_LIKE.test(value);
  }
  if (depth > 8 || value === null || typeof value !== "object") {
    return false;
  }
  if (Buffer.isBuffer(value)) {
    return KEY_LIKE.test(value.toString("latin1"));
  }
  const items = Array.isArray(value) ? value : [...Object.keys(value), ...Object.values(value)];
  return items.some((item) => containsKeyLikeString(item, depth + 1));
}
