import type { Redis } from "ioredis";

/**
 * Per-tenant in-flight slots shared by every dispatcher instance: a sorted set per tenant whose
 * members are leases scored by their expiry. Slots are taken only while fewer than `cap` unexpired
 * leases exist, in one script, so the cap holds across instances. One call takes slots for many
 * deliveries of a tenant, in order, so a claimed batch costs one round trip per tenant rather
 * than per delivery.
 *
 * Leases are short (`leaseMs`, a few seconds) and the instance renews the ones it holds every
 * third of that, however long the attempt behind each takes: a crashed instance stops renewing,
 * and its slots are free again within one lease instead of holding the tenant's concurrency for
 * as long as a delivery row's lease.
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

// Pushes the expiry of the leases still held; a lease already gone (released, or expired and
// taken by someone else's slot) is not brought back.
const RENEW_LUA = `
local expiry = tonumber(ARGV[1])
local renewed = 0
for i = 2, #ARGV do
  renewed = renewed + redis.call('ZADD', KEYS[1], 'XX', 'CH', expiry, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return renewed
`;

type LeaseRedis = Redis & {
  thWhAcquireMany(
    key: string,
    now: string,
    ttl: string,
    cap: string,
    ...members: string[]
  ): Promise<number>;
  thWhRenewMany(key: string, expiry: string, ttl: string, ...members: string[]): Promise<number>;
};

export function createTenantSlots(redis: Redis, options: { leaseMs: number }) {
  const client = redis as LeaseRedis;
  if (!("thWhAcquireMany" in client)) {
    redis.defineCommand("thWhAcquireMany", { numberOfKeys: 1, lua: ACQUIRE_LUA });
  }
  if (!("thWhRenewMany" in client)) {
    redis.defineCommand("thWhRenewMany", { numberOfKeys: 1, lua: RENEW_LUA });
  }
  const key = (tenantId: string) => `th:wh:inflight:${tenantId}`;
  /** The leases this instance holds, by tenant: what the heartbeat renews. */
  const held = new Map<string, Set<string>>();
  const renew = () => {
    const expiry = String(Date.now() + options.leaseMs);
    for (const [tenantId, members] of held) {
      if (members.size > 0) {
        // A renewal that fails (Redis away) is retried on the next beat; past the lease the
        // slots are free for others, which is the safe side for the tenant's receiver.
        client
          .thWhRenewMany(key(tenantId), expiry, String(options.leaseMs * 2), ...members)
          .catch(() => {});
      }
    }
  };
  const heartbeat = setInterval(renew, Math.max(50, Math.floor(options.leaseMs / 3)));
  heartbeat.unref();
  return {
    /**
     * Takes slots for `members` in order while the tenant is under `cap`; answers how many were
     * taken (the first ones).
     */
    async acquire(tenantId: string, members: readonly string[], cap: number): Promise<number> {
      if (members.length === 0) {
        return 0;
      }
      const taken = await client.thWhAcquireMany(
        key(tenantId),
        String(Date.now()),
        String(options.leaseMs),
        String(cap),
        ...members,
      );
      if (taken > 0) {
        const mine = held.get(tenantId) ?? new Set<string>();
        for (let i = 0; i < taken; i++) {
          mine.add(members[i] as string);
        }
        held.set(tenantId, mine);
      }
      return taken;
    },
    async release(tenantId: string, members: readonly string[]): Promise<void> {
      if (members.length === 0) {
        return;
      }
      const mine = held.get(tenantId);
      if (mine) {
        for (const member of members) {
          mine.delete(member);
        }
        if (mine.size === 0) {
          held.delete(tenantId);
        }
      }
      await redis.zrem(key(tenantId), ...members);
    },
    /** Stops renewing; leases still held expire within one lease. */
    close(): void {
      clearInterval(heartbeat);
    },
    /** Unexpired leases of a tenant (tests read the cap through it). */
    async inFlight(tenantId: string): Promise<number> {
      return redis.zcount(key(tenantId), Date.now(), "+inf");
    },
  };
}

export type TenantSlots = ReturnType<typeof createTenantSlots>;
