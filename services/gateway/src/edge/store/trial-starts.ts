import type { Redis } from "ioredis";

/**
 * A window of trial starts (decision 0362): a sorted set with one member per start, scored by
 * its time (ms). KEYS[1] the set; ARGV[1] now, ARGV[2] the window (ms), ARGV[3] the limit,
 * ARGV[4] the new member. Starts older than the window leave it; while it holds `limit` starts
 * the new one is refused and not counted, else it is added. A refused client is told when the
 * oldest start leaves. At most `limit` members are ever kept. Returns {allowed (1/0), retry at
 * (ms, 0 when allowed)}.
 */
export const TRIAL_SLOT_LUA = `
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(oldest[2]) + window}
end
redis.call('ZADD', KEYS[1], now, ARGV[4])
redis.call('PEXPIRE', KEYS[1], window)
return {1, 0}
`;

export type TrialSlotRedis = Redis & {
  thTrialSlot(
    key: string,
    now: number,
    windowMs: number,
    limit: number,
    member: string,
  ): Promise<number[]>;
};

export interface TrialSlot {
  allowed: boolean;
  /** When one more start would fit (ms); 0 when this one was allowed. */
  retryAtMs: number;
}

/** The trial-start windows: per client address, and per email domain. */
export function trialStarts(redis: TrialSlotRedis) {
  return {
    /**
     * Takes a slot of a trial-start window: `scope` says whose (`ip` or `domain`), `subject` the
     * address or the domain, `member` names this start so it can be given back.
     */
    async takeTrialSlot(
      scope: "ip" | "domain",
      subject: string,
      member: string,
      limit: number,
      windowMs: number,
      now: number,
    ): Promise<TrialSlot> {
      const [allowed, retryAtMs] = (
        await redis.thTrialSlot(
          `th:trials:${scope}:${subject}`,
          Math.floor(now),
          windowMs,
          limit,
          member,
        )
      ).map(Number);
      return { allowed: allowed === 1, retryAtMs: retryAtMs ?? 0 };
    },

    /** Gives back a slot whose start did not become a trial. */
    async giveBackTrialSlot(scope: "ip" | "domain", subject: string, member: string) {
      await redis.zrem(`th:trials:${scope}:${subject}`, member);
    },
  };
}
