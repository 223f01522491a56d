import { inTransaction, type PoolClient } from "@th/db";
import { ApiError } from "@th/service-kit";
import {
  ENDED_SESSION_KEPT_MS,
  newRefreshToken,
  newSessionId,
  refreshOutcome,
  refreshTokenHash,
} from "../domain/sessions.ts";
import { type TenantJson, tenantChangedEvent, tenantFromJson } from "../domain/tenants.ts";
import type { AccountsDeps, Queryable } from "./tenant-rows.ts";

/** A member who may hold a dashboard session: active, of a tenant that is not cancelled. */
async function sessionMember(client: Queryable, memberId: string, now: () => Date) {
  const { rows } = await client.query<{
    id: string;
    email: string;
    role: "admin" | "member";
    session_epoch: number;
    tenant: TenantJson;
  }>(
    `SELECT m.id, m.email, m.role, m.session_epoch, row_to_json(t) AS tenant FROM members m
     JOIN tenants t ON t.id = m.tenant_id WHERE m.id = $1 AND m.removed_at IS NULL`,
    [memberId],
  );
  const row = rows[0];
  if (!row) {
    return null;
  }
  const tenant = tenantFromJson(row.tenant);
  return {
    member: { id: row.id, email: row.email, role: row.role },
    company: tenant.company,
    tenant: tenantChangedEvent(tenant, now()),
    epoch: row.session_epoch,
  };
}

type SessionMember = NonNullable<Awaited<ReturnType<typeof sessionMember>>>;

function mayHoldSession(state: SessionMember | null): state is SessionMember {
  return state !== null && (state.tenant.status === "trialing" || state.tenant.status === "active");
}

/** What the gateway gets for a session: the member, and the refresh token to hand on, if any. */
function sessionAnswer(
  state: SessionMember,
  session: { id: string; expiresAt: Date },
  refreshToken: string | null,
) {
  const { epoch, ...who } = state;
  return {
    ...who,
    session: {
      id: session.id,
      epoch,
      refresh_token: refreshToken,
      expires_at: session.expiresAt.toISOString(),
    },
  };
}

async function issueRefreshToken(client: PoolClient, sessionId: string, at: Date) {
  const token = newRefreshToken();
  await client.query(
    "INSERT INTO dashboard_refresh_tokens (token_hash, session_id, issued_at) VALUES ($1, $2, $3)",
    [refreshTokenHash(token), sessionId, at],
  );
  return token;
}

/**
 * Opens a session for a member whose password was just proved, at the member's current epoch.
 * The member's sessions that expired more than a day ago are deleted here; retention removes the
 * others' (decision 0394).
 */
export async function openSession(
  deps: Pick<AccountsDeps, "now">,
  client: PoolClient,
  memberId: string,
  lifetimeSeconds: number,
) {
  const state = await sessionMember(client, memberId, deps.now);
  if (!mayHoldSession(state)) {
    return null;
  }
  const at = deps.now();
  await client.query("DELETE FROM dashboard_sessions WHERE member_id = $1 AND expires_at < $2", [
    memberId,
    new Date(at.getTime() - ENDED_SESSION_KEPT_MS),
  ]);
  const session = {
    id: newSessionId(),
    expiresAt: new Date(at.getTime() + lifetimeSeconds * 1000),
  };
  await client.query(
    `INSERT INTO dashboard_sessions (id, tenant_id, member_id, epoch, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [session.id, state.tenant.tenant_id, memberId, state.epoch, at, session.expiresAt],
  );
  return sessionAnswer(state, session, await issueRefreshToken(client, session.id, at));
}

/**
 * A password change or reset: the member's epoch rises, so access tokens of the old one are
 * refused at the edge, and every open session of theirs ends, so no refresh token works. Returns
 * the new epoch, which the gateway tells the edge.
 */
export async function endSessionsForPassword(
  client: PoolClient,
  memberId: string,
  at: Date,
): Promise<number> {
  const { rows } = await client.query<{ session_epoch: number }>(
    "UPDATE members SET session_epoch = session_epoch + 1 WHERE id = $1 RETURNING session_epoch",
    [memberId],
  );
  await client.query(
    `UPDATE dashboard_sessions SET ended_at = $2, end_reason = 'password'
     WHERE member_id = $1 AND ended_at IS NULL`,
    [memberId, at],
  );
  return rows[0]?.session_epoch ?? 0;
}

/** Refresh, sign-out: the gateway's calls about one open session. */
export function createSessions(deps: AccountsDeps) {
  const { pool, now } = deps;

  /** The refresh inside its transaction; null when the session is over (a reuse ends it here). */
  async function rotate(client: PoolClient, sessionId: string, refreshToken: string) {
    const { rows } = await client.query<{
      member_id: string;
      epoch: number;
      expires_at: Date;
      ended_at: Date | null;
    }>(
      "SELECT member_id, epoch, expires_at, ended_at FROM dashboard_sessions WHERE id = $1 FOR UPDATE",
      [sessionId],
    );
    const row = rows[0];
    const tokenHash = refreshTokenHash(refreshToken);
    const token = await client.query<{ used_at: Date | null }>(
      "SELECT used_at FROM dashboard_refresh_tokens WHERE token_hash = $1 AND session_id = $2",
      [tokenHash, sessionId],
    );
    const state = row ? await sessionMember(client, row.member_id, now) : null;
    const at = now();
    const outcome = refreshOutcome(
      {
        session: row
          ? { endedAt: row.ended_at, expiresAt: row.expires_at, epoch: row.epoch }
          : null,
        memberEpoch: mayHoldSession(state) ? state.epoch : null,
        token: token.rows[0] ? { usedAt: token.rows[0].used_at } : null,
      },
      at,
    );
    if (outcome === "reuse") {
      await client.query(
        "UPDATE dashboard_sessions SET ended_at = $2, end_reason = 'reuse' WHERE id = $1",
        [sessionId, at],
      );
    }
    if (!row || !mayHoldSession(state) || outcome === "reuse" || outcome === "ended") {
      return null;
    }
    const session = { id: sessionId, expiresAt: row.expires_at };
    if (outcome === "grace") {
      return sessionAnswer(state, session, null);
    }
    await client.query("UPDATE dashboard_refresh_tokens SET used_at = $2 WHERE token_hash = $1", [
      tokenHash,
      at,
    ]);
    return sessionAnswer(state, session, await issueRefreshToken(client, sessionId, at));
  }

  return {
    /**
     * Spends a refresh token and issues the next, after checking that the session is open, the
     * member still active at the session's epoch and the tenant not cancelled. A token spent
     * before (outside the grace) ends the session; the refusal is the same as for any session
     * that has ended, so a thief learns nothing from it.
     */
    async refreshSession(sessionId: string, refreshToken: string) {
      const answer = await inTransaction(pool, (client) => rotate(client, sessionId, refreshToken));
      if (!answer) {
        throw new ApiError("unauthorized", "the dashboard session has ended; sign in again");
      }
      return answer;
    },

    /** Sign-out: the session ends; its refresh tokens stop working. */
    async endSession(sessionId: string) {
      await pool.query(
        `UPDATE dashboard_sessions SET ended_at = $2, end_reason = 'sign_out'
         WHERE id = $1 AND ended_at IS NULL`,
        [sessionId, now()],
      );
    },

    /** Whether a member may still hold a session, with the tenant's current snapshot. */
    async sessionState(memberId: string) {
      const state = await sessionMember(pool, memberId, now);
      if (!mayHoldSession(state)) {
        return null;
      }
      const { epoch: _epoch, ...who } = state;
      return who;
    },
  };
}
