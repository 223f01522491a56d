import type { Redis } from "ioredis";

/**
 * Per-tenant in-flight slots shared by every dispatcher instance: a sorted set per tenant whose
 * members are leases scored by their expiry. Slots are taken only while fewer than `cap` unexpired
 * leases exist, in one script, so the cap holds across instances. A crashed instance's leases
 * expire after the lease time and free their slots. One call takes slots for many deliveries of a
 * tenant, in order, so a claimed batch costs one round trip per tenant rather than per delivery.
 */
const ACQUIRE_LUA = `
local now = tonumber(ARGV[1])
local expiry = now + tonumber(ARGV[2])
local cap = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZCARD', KEYS[1])
local taken = 0
for i = 4, #ARGV do
  if held >= cap then break end
  held = held + redis.call('ZADD', KEYS[1], expiry, ARGV[i])
  taken = taken + 1
end
if taken > 0 then redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2) end
return taken
`;

type LeaseRedis = Redis & {
  thWhAcquireMany(
    key: string,
    now: string,
    ttl: string,
    cap: string,
    ...members: string[]
  ): Promise<number>;
};

export function createTenantSlots(redis: Redis, options: { leaseMs: number }) {
  const client = redis as LeaseRedis;
  if (!("thWhAcquireMany" in client)) {
    redis.defineCommand("thWhAcquireMany", { numberOfKeys: 1, lua: ACQUIRE_LUA });
  }
  const key = (tenantId: string) => `th:wh:inflight:${tenantId}`;
  return {
    /**
     * Takes slots for `members` in order while the tenant is under `cap`; answers how many were
     * taken (the first ones).
     */
    async acquire(tenantId: string, members: readonly string[], cap: number): Promise<number> {
      if (members.length === 0) {
        return 0;
      }
      return client.thWhAcquireMany(
        key(tenantId),
        String(Date.now()),
        String(options.leaseMs),
        String(cap),
        ...members,
      );
    },
    async release(tenantId: string, members: readonly string[]): Promise<void> {
      if (members.length > 0) {
        await redis.zrem(key(tenantId), ...members);
      }
    },
    /** Unexpired leases of a tenant (tests read the cap through it). */
    async inFlight(tenantId: string): Promise<number> {
      return redis.zcount(key(tenantId), Date.now(), "+inf");
    },
  };
}

export type TenantSlots = ReturnType<typeof createTenantSlots>;
