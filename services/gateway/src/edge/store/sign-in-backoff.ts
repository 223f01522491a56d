import type { Redis } from "ioredis";

/**
 * Failed sign-ins per account (decision 0335): one hash per normalised email, `n` the attempts
 * counted since the last success and `until` the end of the current lock (ms). An attempt is
 * counted before its password is checked, so attempts sent together cannot all slip in before the
 * first failure is recorded; a success deletes the hash. From the `free`-th attempt on, each one
 * locks the account for `first` ms, doubling with every further attempt up to `longest`. While
 * locked, attempts are refused before any check and are not counted, so hammering a locked
 * account neither lengthens the lock nor tests a password. The hash is forgotten `memory` ms
 * after the last counted attempt.
 *
 * KEYS[1] the account's hash; ARGV[1] now (ms), ARGV[2] free, ARGV[3] first, ARGV[4] longest,
 * ARGV[5] memory. Returns {allowed (1/0), locked until (ms, 0 when not locked)}.
 */
export const SIGN_IN_ATTEMPT_LUA = `
local now = tonumber(ARGV[1])
local lockedUntil = tonumber(redis.call('HGET', KEYS[1], 'until') or '0')
if lockedUntil > now then return {0, lockedUntil} end
local attempts = redis.call('HINCRBY', KEYS[1], 'n', 1)
local free = tonumber(ARGV[2])
local untilMs = 0
if attempts >= free then
  local doublings = math.min(attempts - free, 40)
  untilMs = now + math.min(tonumber(ARGV[3]) * 2 ^ doublings, tonumber(ARGV[4]))
  redis.call('HSET', KEYS[1], 'until', string.format('%d', untilMs))
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return {1, untilMs}
`;

export interface SignInBackoffPolicy {
  /** The attempt that first locks the account; those before it are free. */
  freeAttempts: number;
  firstLockMs: number;
  longestLockMs: number;
  /** How long failures are remembered after the last one. */
  memoryMs: number;
}

export interface SignInAttempt {
  /** Whether the password may be checked at all; false while the account is locked. */
  allowed: boolean;
  /** When the lock this attempt met, or would set if it fails, ends (ms); 0 when none. */
  lockedUntilMs: number;
}

export type SignInBackoffRedis = Redis & {
  thSignInAttempt(key: string, ...args: number[]): Promise<number[]>;
};

export function signInBackoff(redis: SignInBackoffRedis) {
  return {
    /** Counts an attempt on the account before its password is checked, unless it is locked. */
    async beginSignIn(
      accountKey: string,
      now: number,
      policy: SignInBackoffPolicy,
    ): Promise<SignInAttempt> {
      const [allowed, lockedUntilMs] = (
        await redis.thSignInAttempt(
          `th:signin:${accountKey}`,
          Math.floor(now),
          policy.freeAttempts,
          policy.firstLockMs,
          policy.longestLockMs,
          policy.memoryMs,
        )
      ).map(Number);
      return { allowed: allowed === 1, lockedUntilMs: lockedUntilMs ?? 0 };
    },

    /** A proved password: the account's failures are forgotten. */
    async signInSucceeded(accountKey: string): Promise<void> {
      await redis.del(`th:signin:${accountKey}`);
    },
  };
}
