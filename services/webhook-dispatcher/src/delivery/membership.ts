import type { Redis } from "ioredis";
import { type Share, shareOf, WHOLE } from "../domain/shard.ts";

/**
 * The dispatcher instances alive now, so each can claim the deliveries of its own share of the
 * tenants (decision 0180). Every instance scores itself in one sorted set with the time of its
 * last beat and reads the live members back in the same script; a member that stopped beating
 * for `ttlMs` drops out, and the others' shares grow to cover its tenants. A view older than
 * `ttlMs` (Redis unreachable) is not trusted: the instance then claims for every tenant, as a
 * single instance would, which costs efficiency and never a delivery.
 */
const BEAT_LUA = `
local now = tonumber(ARGV[1])
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[3]))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
return redis.call('ZRANGE', KEYS[1], 0, -1)
`;

type MembershipRedis = Redis & {
  thWhBeat(key: string, now: string, member: string, ttl: string): Promise<string[]>;
};

const KEY = "th:wh:members";

export function createMembership(
  redis: Redis,
  options: { instanceId: string; beatMs: number; ttlMs: number; now?: () => number },
) {
  const client = redis as MembershipRedis;
  if (!("thWhBeat" in client)) {
    redis.defineCommand("thWhBeat", { numberOfKeys: 1, lua: BEAT_LUA });
  }
  const now = options.now ?? Date.now;
  let members: string[] = [];
  let seenAt = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;

  async function beat() {
    const at = now();
    members = await client.thWhBeat(KEY, String(at), options.instanceId, String(options.ttlMs));
    seenAt = at;
  }

  return {
    /** Joins at once (the first share counts this instance), then beats every `beatMs`. */
    async start() {
      await beat().catch(() => {});
      timer = setInterval(() => {
        // A failed beat leaves the view to age; past `ttlMs` it is no longer used.
        beat().catch(() => {});
      }, options.beatMs);
      timer.unref();
    },
    /** This instance's share of the tenants now. */
    share(): Share {
      if (now() - seenAt > options.ttlMs) {
        return WHOLE;
      }
      return shareOf(members, options.instanceId);
    },
    /** Leaves at once, so the others take its tenants over without waiting for `ttlMs`. */
    async stop() {
      clearInterval(timer);
      await redis.zrem(KEY, options.instanceId).catch(() => {});
    },
  };
}
