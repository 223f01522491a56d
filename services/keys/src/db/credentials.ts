import { inTransaction, type PoolClient } from "@th/db";
import { ApiError } from "@th/service-kit";
import {
  adminTokenPurpose,
  type PasswordTokenPurpose,
  passwordTokenExpired,
  passwordTokenExpiresAt,
} from "../domain/password-tokens.ts";
import {
  DECOY_HASH,
  hashPassword,
  needsRehash,
  newPasswordToken,
  passwordTokenHash,
  verifyPassword,
} from "../domain/passwords.ts";
import { endSessionsForPassword, openSession } from "./sessions.ts";
import { type AccountsDeps, type Caller, type Queryable, requireAdmin } from "./tenant-rows.ts";

/** Spends every open password token of a member: only the latest link may work. */
async function spendOpenTokens(client: PoolClient, memberId: string, at: Date): Promise<void> {
  await client.query(
    "UPDATE password_tokens SET used_at = $2 WHERE member_id = $1 AND used_at IS NULL",
    [memberId, at],
  );
}

/** Issues a one-time password link; it replaces any earlier link of the member. */
export async function insertPasswordToken(
  deps: Pick<AccountsDeps, "now">,
  client: PoolClient,
  tenantId: string,
  memberId: string,
  purpose: PasswordTokenPurpose,
  createdBy: string | null,
) {
  const token = newPasswordToken();
  const issuedAt = deps.now();
  const expiresAt = passwordTokenExpiresAt(purpose, issuedAt);
  await spendOpenTokens(client, memberId, issuedAt);
  await client.query(
    `INSERT INTO password_tokens (token_hash, tenant_id, member_id, purpose, created_by, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [passwordTokenHash(token), tenantId, memberId, purpose, createdBy, issuedAt, expiresAt],
  );
  return { member_id: memberId, purpose, token, expires_at: expiresAt.toISOString() };
}

interface SignInCandidate {
  id: string;
  tenant_id: string;
  company: string;
  password_hash: string;
}

/** Members with this email and a password, of tenants that may sign in. */
async function signInCandidates(
  client: Queryable,
  email: string,
  tenantId: string | null,
): Promise<SignInCandidate[]> {
  const { rows } = await client.query<SignInCandidate>(
    `SELECT m.id, m.tenant_id, t.company, m.password_hash FROM members m JOIN tenants t ON t.id = m.tenant_id
     WHERE lower(m.email) = lower($1) AND m.removed_at IS NULL AND m.password_hash IS NOT NULL
       AND t.status IN ('trialing', 'active') AND ($2::text IS NULL OR m.tenant_id = $2)
     ORDER BY m.created_at, m.id`,
    [email, tenantId],
  );
  return rows;
}

/** The one candidate the password opens, or null; several is a conflict that names them. */
async function candidateOpenedBy(
  candidates: SignInCandidate[],
  password: string,
): Promise<SignInCandidate | null> {
  if (candidates.length === 0) {
    await verifyPassword(password, DECOY_HASH);
    return null;
  }
  const matching: SignInCandidate[] = [];
  for (const row of candidates) {
    if (await verifyPassword(password, row.password_hash)) {
      matching.push(row);
    }
  }
  if (matching.length > 1) {
    // The caller has shown the password of each: naming them lets a sign-in page ask which.
    throw new ApiError(
      "conflict",
      "this email signs in to several accounts; choose one with tenant_id",
      { accounts: matching.map((row) => ({ tenant_id: row.tenant_id, company: row.company })) },
    );
  }
  return matching[0] ?? null;
}

/**
 * A hash of an older scheme or weaker setting is replaced by one of the current setting once its
 * password has been proved. Only if it is still the hash that was checked: a password changed in
 * the meantime stays changed.
 */
async function upgradeHash(client: Queryable, member: SignInCandidate, password: string) {
  if (!needsRehash(member.password_hash)) {
    return;
  }
  await client.query("UPDATE members SET password_hash = $3 WHERE id = $1 AND password_hash = $2", [
    member.id,
    member.password_hash,
    await hashPassword(password),
  ]);
}

/** Dashboard sign-in and password links. */
export function createCredentials(deps: AccountsDeps) {
  const { pool, now } = deps;

  return {
    /**
     * Dashboard sign-in: opens a session. Every path costs one password check, so the answer
     * time does not tell whether the email exists. An email used in several tenants needs
     * `tenant_id` when the password matches more than one of them. Null: not signed in.
     */
    async signIn(input: {
      email: string;
      password: string;
      tenant_id?: string;
      lifetime_seconds: number;
    }) {
      const candidates = await signInCandidates(pool, input.email, input.tenant_id ?? null);
      const member = await candidateOpenedBy(candidates, input.password);
      if (!member) {
        return null;
      }
      await upgradeHash(pool, member, input.password);
      return inTransaction(pool, (client) =>
        openSession(deps, client, member.id, input.lifetime_seconds),
      );
    },

    /**
     * An admin's one-time link for a member of the tenant: `invite` while the member has no
     * password, `reset` afterwards. Any earlier unused link of that member stops working.
     */
    async issuePasswordToken(caller: Caller, memberId: string) {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        const { rows } = await client.query<{ password_hash: string | null }>(
          "SELECT password_hash FROM members WHERE id = $1 AND tenant_id = $2 AND removed_at IS NULL FOR UPDATE",
          [memberId, caller.tenantId],
        );
        const member = rows[0];
        if (!member) {
          throw new ApiError("not_found", `no member ${memberId}`);
        }
        return insertPasswordToken(
          deps,
          client,
          caller.tenantId,
          memberId,
          adminTokenPurpose(Boolean(member.password_hash)),
          caller.memberId,
        );
      });
    },

    /**
     * Sets a password with a one-time token; the token and any other open one are spent, and
     * every session of the member ends (a reset is how a member takes an account back).
     */
    async redeemPasswordToken(token: string, password: string) {
      const hash = await hashPassword(password);
      return inTransaction(pool, async (client) => {
        const { rows } = await client.query<{ member_id: string; expires_at: Date }>(
          `SELECT p.member_id, p.expires_at FROM password_tokens p
           JOIN members m ON m.id = p.member_id AND m.removed_at IS NULL
           WHERE p.token_hash = $1 AND p.used_at IS NULL FOR UPDATE OF p`,
          [passwordTokenHash(token)],
        );
        const row = rows[0];
        const at = now();
        if (!row || passwordTokenExpired(row.expires_at, at)) {
          throw new ApiError(
            "not_found",
            "this password link is unknown, used or expired; ask an admin for a new one",
          );
        }
        await client.query(
          "UPDATE members SET password_hash = $2, password_set_at = $3 WHERE id = $1",
          [row.member_id, hash, at],
        );
        await spendOpenTokens(client, row.member_id, at);
        const epoch = await endSessionsForPassword(client, row.member_id, at);
        return { member_id: row.member_id, session_epoch: epoch };
      });
    },

    /**
     * A signed-in member changes their own password, proving the current one. Every session of
     * the member ends, this one included: whoever else held one is out at once.
     */
    async changePassword(caller: Caller, current: string, next: string) {
      const { rows } = await pool.query<{ password_hash: string | null }>(
        "SELECT password_hash FROM members WHERE id = $1 AND tenant_id = $2 AND removed_at IS NULL",
        [caller.memberId, caller.tenantId],
      );
      const stored = rows[0]?.password_hash ?? DECOY_HASH;
      if (!(await verifyPassword(current, stored))) {
        throw new ApiError("forbidden", "the current password is not correct");
      }
      const hash = await hashPassword(next);
      return inTransaction(pool, async (client) => {
        const at = now();
        await client.query(
          "UPDATE members SET password_hash = $2, password_set_at = $3 WHERE id = $1",
          [caller.memberId, hash, at],
        );
        const epoch = await endSessionsForPassword(client, caller.memberId, at);
        return { member_id: caller.memberId, session_epoch: epoch };
      });
    },
  };
}
