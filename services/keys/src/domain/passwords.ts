import { createHash, randomBytes, scrypt, timingSafeEqual } from "node:crypto";

/**
 * Dashboard passwords: scrypt (RFC 7914) with a per-password salt. The parameters travel with
 * the hash (`scrypt$N$r$p$salt$hash`), so they can be raised later and old hashes still verify.
 * N = 2^15, r = 8 costs about 32 MiB and 50–100 ms per check: cheap for a sign-in, expensive
 * for someone testing guesses against a stolen table.
 */
const N = 32_768;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
const MAX_MEM = 64 * 1024 * 1024;

export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 200;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(
      password.normalize("NFKC"),
      salt,
      KEY_LENGTH,
      { N: n, r, p, maxmem: MAX_MEM },
      (error, key) => (error ? reject(error) : resolve(key)),
    );
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, N, R, P);
  return `scrypt$${N}$${R}$${P}$${salt.toString("base64url")}$${key.toString("base64url")}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !n || !r || !p || !salt || !hash) {
    return false;
  }
  const expected = Buffer.from(hash, "base64url");
  const actual = await derive(
    password,
    Buffer.from(salt, "base64url"),
    Number(n),
    Number(r),
    Number(p),
  );
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** A hash no password matches, checked when no member has the email, so timing says nothing. */
export const DECOY_HASH = `scrypt$${N}$${R}$${P}$${randomBytes(16).toString("base64url")}$${randomBytes(KEY_LENGTH).toString("base64url")}`;

/**
 * One-time token that lets a member set a password: `thpw_` + 32 random bytes. Stored as a
 * SHA-256 hash: the token is high-entropy, so a slow hash adds nothing.
 */
export function newPasswordToken(): string {
  return `thpw_${randomBytes(32).toString("base64url")}`;
}

export function passwordTokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}
