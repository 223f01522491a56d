import { createHash } from "node:crypto";

/**
 * The account a sign-in names, as the failed-sign-in window counts it (decision 0335): the email
 * in one normal form, so `Admin@X` and `admin@x` share one window (the keys service matches them
 * as one member), hashed so Redis holds no address. Unknown emails get windows exactly like known
 * ones: a lock says nothing about whether the account exists.
 */
export function signInAccountKey(email: string): string {
  const normal = email.normalize("NFKC").trim().toLowerCase();
  return createHash("sha256").update(normal).digest("hex");
}

/** Whole seconds until a lock ends, never less than one. */
export function lockWaitSeconds(lockedUntilMs: number, now: number): number {
  return Math.max(1, Math.ceil((lockedUntilMs - now) / 1000));
}

/** The back-off the gateway's settings describe, in the store's terms. */
export function signInBackoffPolicy(settings: {
  freeAttempts: number;
  longestLockSeconds: number;
}) {
  return {
    freeAttempts: settings.freeAttempts,
    firstLockMs: 1_000,
    longestLockMs: settings.longestLockSeconds * 1000,
    // A quiet day forgets an account's failures: the next lock starts short again.
    memoryMs: 86_400_000,
  };
}
