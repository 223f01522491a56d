import type { Redis } from "ioredis";

/** Raises a member's session epoch mark, never lowers it: KEYS[1], ARGV[1] epoch, ARGV[2] ttl (s). */
const RAISE_EPOCH_LUA = `
local current = tonumber(redis.call('GET', KEYS[1]) or '-1')
if tonumber(ARGV[1]) > current then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
end
return 1
`;

/** The marks that end dashboard sessions on every gateway instance at once. */
export function sessionMarks(redis: Redis) {
  return {
    /** Sign-out: the session's tokens stop working on every instance until they expire. */
    async revokeSession(sessionId: string, ttlSeconds: number) {
      await redis.set(`th:session:${sessionId}`, "revoked", "EX", Math.max(1, ttlSeconds));
    },

    /**
     * A removed member: every session of theirs stops working on every instance at once, not when
     * its access token would next be refreshed.
     */
    async endMemberSessions(memberId: string, ttlSeconds: number) {
      await redis.set(`th:member-sessions-ended:${memberId}`, "1", "EX", Math.max(1, ttlSeconds));
    },

    /**
     * A password change or reset: the member's access tokens of an earlier epoch stop working on
     * every instance at once, while tokens of sessions opened since keep working. The mark lives
     * as long as an access token, after which the old ones have expired anyway.
     */
    async raiseMemberEpoch(memberId: string, epoch: number, ttlSeconds: number) {
      await redis.eval(
        RAISE_EPOCH_LUA,
        1,
        `th:member-epoch:${memberId}`,
        epoch,
        Math.max(1, Math.ceil(ttlSeconds)),
      );
    },

    async isSessionRevoked(sessionId: string): Promise<boolean> {
      return (await redis.exists(`th:session:${sessionId}`)) === 1;
    },
  };
}
