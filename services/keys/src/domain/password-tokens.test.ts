import { describe, expect, it } from "vitest";
import {
  adminTokenPurpose,
  passwordTokenExpired,
  passwordTokenExpiresAt,
} from "./password-tokens.ts";

const issued = new Date("2026-05-01T12:00:00.000Z");

describe("password tokens", () => {
  it("last seven days for a trial or an invite and one day for a reset", () => {
    expect(passwordTokenExpiresAt("trial", issued).toISOString()).toBe("2026-05-08T12:00:00.000Z");
    expect(passwordTokenExpiresAt("invite", issued).toISOString()).toBe("2026-05-08T12:00:00.000Z");
    expect(passwordTokenExpiresAt("reset", issued).toISOString()).toBe("2026-05-02T12:00:00.000Z");
  });

  it("are expired from their expiry instant on", () => {
    const expires = passwordTokenExpiresAt("reset", issued);
    expect(passwordTokenExpired(expires, new Date(expires.getTime() - 1))).toBe(false);
    expect(passwordTokenExpired(expires, expires)).toBe(true);
  });

  it("an admin's link invites a member without a password and resets one with a password", () => {
    expect(adminTokenPurpose(false)).toBe("invite");
    expect(adminTokenPurpose(true)).toBe("reset");
  });
});
