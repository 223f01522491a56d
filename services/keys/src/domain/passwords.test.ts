import { describe, expect, it } from "vitest";
import { ARGON2ID, DECOY_HASH, hashPassword, needsRehash, verifyPassword } from "./passwords.ts";

// Made by the Argon2 reference implementation's command line (`argon2 saltsaltsaltsalt -id -t 2
// -k 19456 -p 1 -l 32 -e`), so the stored form is the one every Argon2 library reads and writes.
const REFERENCE_HASH =
  "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHRzYWx0c2FsdA$jx0zIiluto8QPqR0aIAx+H+SmGZ8ac+6li2pE4fl4Ao";
// Made by this service before Argon2id: scrypt N = 2^15, r = 8, p = 1.
const SCRYPT_ERA_HASH =
  "scrypt$32768$8$1$oTpFaCo-b51Z7nD5m69mcg$wAmPjUVCEx-LiVPcctwMcx46Jr2uSHowdr8QRElu2Dw";

describe("password hashes", () => {
  it("are Argon2id with OWASP's memory and passes, and verify only the password they were made from", async () => {
    const stored = await hashPassword("correct horse battery");
    expect(stored).toMatch(
      /^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/,
    );
    expect(ARGON2ID.memoryKiB).toBeGreaterThanOrEqual(19_456);
    expect(await verifyPassword("correct horse battery", stored)).toBe(true);
    expect(await verifyPassword("correct horse batterY", stored)).toBe(false);
    expect(await hashPassword("correct horse battery")).not.toBe(stored);
    expect(needsRehash(stored)).toBe(false);
  });

  it("read the reference implementation's encoding", async () => {
    expect(await verifyPassword("reference implementation passphrase", REFERENCE_HASH)).toBe(true);
    expect(await verifyPassword("reference implementation passphrasE", REFERENCE_HASH)).toBe(false);
  });

  it("of the scrypt era still verify, and are due for a rehash", async () => {
    expect(await verifyPassword("legacy scrypt passphrase", SCRYPT_ERA_HASH)).toBe(true);
    expect(await verifyPassword("legacy scrypt passphrasE", SCRYPT_ERA_HASH)).toBe(false);
    expect(needsRehash(SCRYPT_ERA_HASH)).toBe(true);
  });

  it("with weaker Argon2id settings are due for a rehash", () => {
    const weak = REFERENCE_HASH.replace("m=19456,t=2", "m=4096,t=1");
    expect(needsRehash(weak)).toBe(true);
  });

  it("whose stored settings would cost the service its memory or minutes match nothing and are not computed", async () => {
    const started = Date.now();
    const huge = REFERENCE_HASH.replace("m=19456", "m=4194304");
    expect(await verifyPassword("reference implementation passphrase", huge)).toBe(false);
    const slow = SCRYPT_ERA_HASH.replace("scrypt$32768", "scrypt$1048576");
    expect(await verifyPassword("legacy scrypt passphrase", slow)).toBe(false);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("of an unknown member are checked against a decoy no password opens", async () => {
    expect(DECOY_HASH.startsWith("$argon2id$v=19$m=19456,t=2,p=1$")).toBe(true);
    expect(await verifyPassword("", DECOY_HASH)).toBe(false);
    expect(await verifyPassword("correct horse battery", DECOY_HASH)).toBe(false);
  });
});
