import { argon2, createHash, randomBytes, scrypt, timingSafeEqual } from "node:crypto";

/**
 * Dashboard passwords: Argon2id (RFC 9106) from Node's own crypto (OpenSSL's implementation),
 * stored as a PHC string, `$argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>`, so the parameters
 * travel with the hash and can be raised later (decision 0338). m = 19 MiB, t = 2, p = 1 is
 * OWASP's Argon2id setting: about 23 ms (median; 33 ms at p90) and 19 MiB per check here, and
 * each guess against a stolen table costs an attacker the same memory. Hashes of the scrypt era (`scrypt$N$r$p$salt$hash`)
 * still verify; `needsRehash` tells a sign-in to replace them with the password it just proved.
 */
export const ARGON2ID = { memoryKiB: 19_456, passes: 2, parallelism: 1 } as const;
const SALT_BYTES = 16;
const KEY_LENGTH = 32;

// A stored hash is trusted only so far: parameters beyond these are refused, not computed, so a
// tampered row cannot make one sign-in take the service's memory or minutes of CPU.
const MAX_ARGON2_MEMORY_KIB = 262_144;
const MAX_ARGON2_PASSES = 16;
const MAX_ARGON2_PARALLELISM = 8;
const SCRYPT_MAX_MEM = 64 * 1024 * 1024;

const PHC_ARGON2ID =
  /^\$argon2id\$v=19\$m=(\d{1,7}),t=(\d{1,3}),p=(\d{1,3})\$([A-Za-z0-9+/]{11,})\$([A-Za-z0-9+/]{11,})$/;

interface Argon2Setting {
  memoryKiB: number;
  passes: number;
  parallelism: number;
}

/** Unpadded standard base64, as PHC strings write salts and hashes. */
function phcBase64(bytes: Buffer): string {
  return bytes.toString("base64").replace(/=+$/, "");
}

function deriveArgon2id(password: string, salt: Buffer, setting: Argon2Setting): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    argon2(
      "argon2id",
      {
        message: password.normalize("NFKC"),
        nonce: salt,
        memory: setting.memoryKiB,
        passes: setting.passes,
        parallelism: setting.parallelism,
        tagLength: KEY_LENGTH,
      },
      (error, key) => (error ? reject(error) : resolve(key)),
    );
  });
}

function deriveScrypt(password: string, salt: Buffer, n: number, r: number, p: number) {
  return new Promise<Buffer>((resolve, reject) => {
    scrypt(
      password.normalize("NFKC"),
      salt,
      KEY_LENGTH,
      { N: n, r, p, maxmem: SCRYPT_MAX_MEM },
      (error, key) => (error ? reject(error) : resolve(key)),
    );
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await deriveArgon2id(password, salt, ARGON2ID);
  return `$argon2id$v=19$m=${ARGON2ID.memoryKiB},t=${ARGON2ID.passes},p=${ARGON2ID.parallelism}$${phcBase64(salt)}$${phcBase64(key)}`;
}

/** A stored Argon2id hash's parameters, salt and tag, or null when it is not one we accept. */
function parseArgon2id(stored: string) {
  const match = PHC_ARGON2ID.exec(stored);
  if (!match) {
    return null;
  }
  const setting = {
    memoryKiB: Number(match[1]),
    passes: Number(match[2]),
    parallelism: Number(match[3]),
  };
  const withinBounds =
    setting.memoryKiB >= 8 * setting.parallelism &&
    setting.memoryKiB <= MAX_ARGON2_MEMORY_KIB &&
    setting.passes >= 1 &&
    setting.passes <= MAX_ARGON2_PASSES &&
    setting.parallelism >= 1 &&
    setting.parallelism <= MAX_ARGON2_PARALLELISM;
  if (!withinBounds) {
    return null;
  }
  return {
    setting,
    salt: Buffer.from(match[4] as string, "base64"),
    hash: Buffer.from(match[5] as string, "base64"),
  };
}

async function verifyArgon2id(password: string, stored: string): Promise<boolean> {
  const parsed = parseArgon2id(stored);
  if (!parsed) {
    return false;
  }
  const actual = await deriveArgon2id(password, parsed.salt, parsed.setting);
  return actual.length === parsed.hash.length && timingSafeEqual(actual, parsed.hash);
}

/** The scrypt era's `scrypt$N$r$p$salt$hash` (base64url), verified and never written again. */
async function verifyScrypt(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !n || !r || !p || !salt || !hash) {
    return false;
  }
  const expected = Buffer.from(hash, "base64url");
  try {
    const actual = await deriveScrypt(
      password,
      Buffer.from(salt, "base64url"),
      Number(n),
      Number(r),
      Number(p),
    );
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  } catch {
    // Parameters scrypt refuses (or that exceed its memory bound) match no password.
    return false;
  }
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  return stored.startsWith("$argon2id$")
    ? verifyArgon2id(password, stored)
    : verifyScrypt(password, stored);
}

/** Whether a hash that just verified should be replaced: another scheme, or weaker settings. */
export function needsRehash(stored: string): boolean {
  const parsed = parseArgon2id(stored);
  return (
    !parsed ||
    parsed.setting.memoryKiB < ARGON2ID.memoryKiB ||
    parsed.setting.passes < ARGON2ID.passes ||
    parsed.salt.length < SALT_BYTES ||
    parsed.hash.length < KEY_LENGTH
  );
}

/**
 * A hash no password matches, checked when no member has the email, so the answer takes as long
 * as for a member's hash of the current setting and timing says nothing.
 */
export const DECOY_HASH = `$argon2id$v=19$m=${ARGON2ID.memoryKiB},t=${ARGON2ID.passes},p=${ARGON2ID.parallelism}$${phcBase64(randomBytes(SALT_BYTES))}$${phcBase64(randomBytes(KEY_LENGTH))}`;

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
