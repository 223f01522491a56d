import type { Redis } from "ioredis";

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

    async isSessionRevoked(sessionId: string): Promise<boolean> {
      return (await redis.exists(`th:session:${sessionId}`)) === 1;
    },
  };
}
