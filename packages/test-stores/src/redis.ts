import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { resolvedMode } from "./choice.ts";

/** The Redis of this test run: the container's, else REDIS_URL (the bootstrap sets it), else local. */
export function testRedisUrl(fallback = "redis://127.0.0.1:6379"): string {
  return resolvedMode() === "containers" ? (process.env.REDIS_URL ?? fallback) : fallback;
}

/**
 * A Redis connection for one test file: the run's Redis under a key prefix nobody else uses, so
 * files share a server without meeting.
 */
export function openTestRedis(fallbackUrl?: string): Redis {
  return new Redis(testRedisUrl(fallbackUrl), {
    keyPrefix: `test:${randomBytes(6).toString("hex")}:`,
  });
}

/** Deletes every key under the connection's prefix, then disconnects. */
export async function closeTestRedis(redis: Redis): Promise<void> {
  const keys = await redis.keys("*");
  if (keys.length > 0) {
    // KEYS returns prefixed names; strip the prefix so DEL does not add it twice.
    const prefix = redis.options.keyPrefix ?? "";
    await redis.del(...keys.map((key) => key.slice(prefix.length)));
  }
  redis.disconnect();
}
