import type { Redis } from "ioredis";

/**
 * Per-tenant in-flight slots shared by every dispatcher instance: a sorted set per tenant whose
 * members are leases scored by their expiry. A slot is taken only while fewer than `cap` unexpired
 * leases exist, in one script, so the cap holds across instances. A crashed instance's leases
 * expire after the lease time and free their slots.
 */
const ACQUIRE_LUA = `
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[4])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
return 1
`;

type LeaseRedis = Redis & {
  thWhAcquire(key: string, now: string, ttl: string, cap: string, member: string): Promise<number>;
};

export function createTenantSlots(redis: Redis, options: { leaseMs: number }) {
  const client = redis as LeaseRedis;
  if (!("thWhAcquire" in client)) {
    redis.defineCommand("thWhAcquire", { numberOfKeys: 1, lua: ACQUIRE_LUA });
  }
  const key = (tenantId: string) => `th:wh:inflight:${tenantId}`;
  return {
    async acquire(tenantId: string, member: string, cap: number): Promise<boolean> {
      const ok = await client.thWhAcquire(
        key(tenantId),
        String(Date.now()),
        String(options.leaseMs),
        String(cap),
        member,
      );
      return ok === 1;
    },
    async release(tenantId: string, member: string): Promise<void> {
      await redis.zrem(key(tenantId), member);
    },
    /** Unexpired leases of a tenant (tests read the cap through it). */
    async inFlight(tenantId: string): Promise<number> {
      return redis.zcount(key(tenantId), Date.now(), "+inf");
    },
  };
}

export type TenantSlots = ReturnType<typeof createTenantSlots>;
