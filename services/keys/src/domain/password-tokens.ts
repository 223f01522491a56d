import { DAY_MS } from "./tenants.ts";

/** How long a one-time password token is valid, by purpose. */
const PASSWORD_TOKEN_TTL_MS = {
  trial: 7 * DAY_MS,
  invite: 7 * DAY_MS,
  reset: DAY_MS,
} as const;

export type PasswordTokenPurpose = keyof typeof PASSWORD_TOKEN_TTL_MS;

export function passwordTokenExpiresAt(purpose: PasswordTokenPurpose, issuedAt: Date): Date {
  return new Date(issuedAt.getTime() + PASSWORD_TOKEN_TTL_MS[purpose]);
}

/** An admin's link sets a first password (`invite`) or replaces one (`reset`). */
export function adminTokenPurpose(hasPassword: boolean): "invite" | "reset" {
  return hasPassword ? "reset" : "invite";
}

/** A token is spent at its expiry instant, not one millisecond later. */
export function passwordTokenExpired(expiresAt: Date, at: Date): boolean {
  return expiresAt.getTime() <= at.getTime();
}
