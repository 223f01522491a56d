import { createHash, randomBytes } from "node:crypto";

/**
 * Dashboard sessions (decision 0337). A sign-in opens a session; its refresh token is used once:
 * each refresh spends it and issues the next. Presenting a spent token again means two parties
 * hold the session's tokens, a thief and its owner, and the keys service cannot tell which is
 * which, so the whole session ends. Tabs of one browser that refresh at the same moment present
 * the same token twice within a moment: that second use, within the grace below, gets a fresh
 * access token but no refresh token (the browser already holds the next one).
 */
export const REFRESH_REUSE_GRACE_MS = 10_000;

/** Bounds of the session lifetime the gateway asks for. */
export const SESSION_LIFETIME_SECONDS = { min: 60, max: 7 * 86_400 } as const;

/** Sessions are kept this long after they expire, then deleted at the member's next sign-in. */
export const ENDED_SESSION_KEPT_MS = 86_400_000;

export function newSessionId(): string {
  return `ses_${randomBytes(12).toString("base64url")}`;
}

/** `thrt_` + 32 random bytes; stored as a SHA-256 hash: high entropy needs no slow hash. */
export function newRefreshToken(): string {
  return `thrt_${randomBytes(32).toString("base64url")}`;
}

export function refreshTokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

export interface RefreshState {
  session: { endedAt: Date | null; expiresAt: Date; epoch: number } | null;
  /** The member's current epoch; null when the member is removed. */
  memberEpoch: number | null;
  /** The presented token as the session knows it; null when the session never issued it. */
  token: { usedAt: Date | null } | null;
}

/**
 * What a refresh with this token does:
 * - `rotate`: the token is the session's current one: spend it, issue the next;
 * - `grace`: spent within the grace (tabs refreshing together): an access token only;
 * - `reuse`: spent earlier, or never issued by this session: the session ends;
 * - `ended`: the session is over (signed out, expired, ended by a password change or reuse).
 */
export function refreshOutcome(
  state: RefreshState,
  now: Date,
): "rotate" | "grace" | "reuse" | "ended" {
  const { session, token } = state;
  if (
    !session ||
    session.endedAt !== null ||
    session.expiresAt.getTime() <= now.getTime() ||
    state.memberEpoch === null ||
    session.epoch !== state.memberEpoch
  ) {
    return "ended";
  }
  if (!token) {
    return "reuse";
  }
  if (token.usedAt === null) {
    return "rotate";
  }
  return now.getTime() - token.usedAt.getTime() <= REFRESH_REUSE_GRACE_MS ? "grace" : "reuse";
}
