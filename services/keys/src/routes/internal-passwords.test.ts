import { INTERNAL_HEADERS } from "@th/service-kit";
import { describe, expect, it } from "vitest";
import { useKeysApp } from "../testing/keys-app.ts";

const keys = useKeysApp({ clock: new Date("2026-11-01T10:00:00Z"), emailDomain: "pw.test" });
const { call, startTrial } = keys;
const DAY = 86_400_000;

/** A call that names no tenant, member or key (signed like every call). */
const token: Record<string, string> = {};
const as = (caller: { tenantId: string; memberId: string }) => ({
  ...token,
  [INTERNAL_HEADERS.tenant]: caller.tenantId,
  [INTERNAL_HEADERS.member]: caller.memberId,
  [INTERNAL_HEADERS.key]: "key_test",
});

/** A sign-in: 201 with an opened session when the email and password match. */
const verify = (email: string, password: string) =>
  call("POST", "/internal/v1/sessions", token, { email, password, lifetime_seconds: 3_600 });

describe("the trial's first admin", () => {
  it("signs in with the password given at trial start, and no setup link is issued", async () => {
    const trial = await startTrial("team", "s3cret-passphrase");
    expect(trial.body.password_setup).toBeNull();
    const ok = await verify(trial.email.toUpperCase(), "s3cret-passphrase");
    expect(ok.statusCode).toBe(201);
    expect(ok.json()).toMatchObject({
      member: { id: trial.caller.memberId, role: "admin" },
      tenant: { tenant_id: trial.caller.tenantId, tier: "team", status: "trialing" },
    });
    expect((await verify(trial.email, "wrong-passphrase")).statusCode).toBe(401);
    expect((await verify("nobody@pw.test", "s3cret-passphrase")).statusCode).toBe(401);
  });

  it("without a password gets a one-time setup token that works once", async () => {
    const trial = await startTrial("operator");
    const setup = trial.body.password_setup;
    expect(setup).toMatchObject({ purpose: "trial", member_id: trial.caller.memberId });
    expect(setup.token).toMatch(/^thpw_/);
    expect((await verify(trial.email, "anything-at-all")).statusCode).toBe(401);
    const set = await call("POST", "/internal/v1/password", token, {
      token: setup.token,
      password: "a brand new passphrase",
    });
    expect(set.statusCode).toBe(200);
    expect((await verify(trial.email, "a brand new passphrase")).statusCode).toBe(201);
    const again = await call("POST", "/internal/v1/password", token, {
      token: setup.token,
      password: "another passphrase!",
    });
    expect(again.statusCode).toBe(404);
  });

  it("refuses a password shorter than 12 characters with the field named", async () => {
    const trial = await startTrial("operator");
    const short = await call("POST", "/internal/v1/password", token, {
      token: trial.body.password_setup.token,
      password: "short",
    });
    expect(short.statusCode).toBe(400);
    expect(JSON.stringify(short.json().fields)).toContain("password");
  });
});

describe("admins invite and reset members", () => {
  it("an invite link lets the new member sign in; a reset replaces the password; both expire", async () => {
    const admin = await startTrial("team", "admin-passphrase-1");
    const added = await call("POST", "/internal/v1/members", as(admin.caller), {
      email: "analyst@pw.test",
      role: "member",
    });
    expect(added.statusCode).toBe(201);
    const memberId = added.json().id as string;
    const invite = await call(
      "POST",
      `/internal/v1/members/${memberId}/password-token`,
      as(admin.caller),
    );
    expect(invite.statusCode).toBe(201);
    expect(invite.json().purpose).toBe("invite");
    await call("POST", "/internal/v1/password", token, {
      token: invite.json().token,
      password: "analyst-passphrase",
    });
    const signedIn = await verify("analyst@pw.test", "analyst-passphrase");
    expect(signedIn.json().member).toMatchObject({ id: memberId, role: "member" });

    // A member cannot issue links.
    const denied = await call(
      "POST",
      `/internal/v1/members/${admin.caller.memberId}/password-token`,
      as({ tenantId: admin.caller.tenantId, memberId }),
    );
    expect(denied.statusCode).toBe(403);

    const reset = await call(
      "POST",
      `/internal/v1/members/${memberId}/password-token`,
      as(admin.caller),
    );
    expect(reset.json().purpose).toBe("reset");
    keys.clock = new Date(keys.clock.getTime() + 2 * DAY);
    const late = await call("POST", "/internal/v1/password", token, {
      token: reset.json().token,
      password: "too-late-passphrase",
    });
    expect(late.statusCode).toBe(404);
    expect((await verify("analyst@pw.test", "analyst-passphrase")).statusCode).toBe(201);
  });

  it("another tenant's member is not found", async () => {
    const one = await startTrial("team", "admin-passphrase-2");
    const other = await startTrial("team", "admin-passphrase-3");
    const response = await call(
      "POST",
      `/internal/v1/members/${other.caller.memberId}/password-token`,
      as(one.caller),
    );
    expect(response.statusCode).toBe(404);
  });
});

describe("session state", () => {
  it("answers for an active member and not after the member is removed or the tenant cancelled", async () => {
    const admin = await startTrial("team", "admin-passphrase-4");
    const state = await call("GET", `/internal/v1/members/${admin.caller.memberId}/session`, token);
    expect(state.statusCode).toBe(200);
    expect(state.json().company).toBe(admin.body.tenant.company);
    await call("POST", "/internal/v1/tenant/cancel", as(admin.caller));
    const after = await call("GET", `/internal/v1/members/${admin.caller.memberId}/session`, token);
    expect(after.statusCode).toBe(404);
    expect((await verify(admin.email, "admin-passphrase-4")).statusCode).toBe(401);
  });

  it("a member changes their own password only with the current one", async () => {
    const admin = await startTrial("team", "admin-passphrase-5");
    const wrong = await call("PUT", "/internal/v1/me/password", as(admin.caller), {
      current_password: "not-it-at-all",
      new_password: "next-passphrase-5",
    });
    expect(wrong.statusCode).toBe(403);
    const right = await call("PUT", "/internal/v1/me/password", as(admin.caller), {
      current_password: "admin-passphrase-5",
      new_password: "next-passphrase-5",
    });
    expect(right.statusCode).toBe(200);
    expect((await verify(admin.email, "next-passphrase-5")).statusCode).toBe(201);
  });
});

describe("password hashes of the scrypt era", () => {
  // Made by this service before Argon2id (scrypt N = 2^15, r = 8, p = 1).
  const SCRYPT_ERA_HASH =
    "scrypt$32768$8$1$oTpFaCo-b51Z7nD5m69mcg$wAmPjUVCEx-LiVPcctwMcx46Jr2uSHowdr8QRElu2Dw";
  const storedHash = async (memberId: string) =>
    (
      await keys.harness.pool.query<{ password_hash: string }>(
        "SELECT password_hash FROM members WHERE id = $1",
        [memberId],
      )
    ).rows[0]?.password_hash;

  it("still sign in, and are replaced by an Argon2id hash at that sign-in; a wrong password replaces nothing", async () => {
    const trial = await startTrial("team", "placeholder-passphrase");
    const memberId = trial.caller.memberId;
    await keys.harness.pool.query("UPDATE members SET password_hash = $2 WHERE id = $1", [
      memberId,
      SCRYPT_ERA_HASH,
    ]);
    expect((await verify(trial.email, "legacy scrypt passphrasE")).statusCode).toBe(401);
    expect(await storedHash(memberId)).toBe(SCRYPT_ERA_HASH);

    expect((await verify(trial.email, "legacy scrypt passphrase")).statusCode).toBe(201);
    const upgraded = await storedHash(memberId);
    expect(upgraded).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect((await verify(trial.email, "legacy scrypt passphrase")).statusCode).toBe(201);
    expect(await storedHash(memberId)).toBe(upgraded);
  });
});
