import { inTransaction, type PoolClient } from "@th/db";
import { ApiError } from "@th/service-kit";
import type { KeyRow } from "../domain/api-keys.ts";
import { newId } from "../domain/ids.ts";
import { seatsTaken } from "../domain/tenants.ts";
import { revokeRows } from "./keys.ts";
import {
  type AccountsDeps,
  type Caller,
  countActiveMembers,
  loadTenant,
  requireAdmin,
} from "./tenant-rows.ts";

type Role = "admin" | "member";

/** Refuses to remove the tenant's only remaining admin. */
async function keepLastAdmin(client: PoolClient, caller: Caller, memberId: string) {
  const { rows } = await client.query<{ role: string }>(
    "SELECT role FROM members WHERE id = $1 AND tenant_id = $2 AND removed_at IS NULL FOR UPDATE",
    [memberId, caller.tenantId],
  );
  if (!rows[0]) {
    throw new ApiError("not_found", `no member ${memberId}`);
  }
  if (rows[0].role !== "admin") {
    return;
  }
  const admins = await client.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM members WHERE tenant_id = $1 AND role = 'admin' AND removed_at IS NULL",
    [caller.tenantId],
  );
  if ((admins.rows[0]?.n ?? 0) <= 1) {
    throw new ApiError("conflict", "the tenant's last admin cannot be removed");
  }
}

/** Revokes the keys a member issued that still work; returns their hashes. */
async function revokeKeysOf(
  deps: AccountsDeps,
  client: PoolClient,
  caller: Caller,
  memberId: string,
): Promise<string[]> {
  const keys = await client.query<KeyRow>(
    "SELECT * FROM api_keys WHERE member_id = $1 AND revoked_at IS NULL FOR UPDATE",
    [memberId],
  );
  await revokeRows(deps, client, keys.rows, caller, "other");
  return keys.rows.map((row) => row.key_hash);
}

/** The tenant's team: listing, adding within the seat cap, removing. */
export function createMembers(deps: AccountsDeps) {
  const { pool, now } = deps;

  return {
    async listMembers(caller: Caller) {
      const { rows } = await pool.query<{
        id: string;
        email: string;
        role: Role;
        created_at: Date;
      }>(
        "SELECT id, email, role, created_at FROM members WHERE tenant_id = $1 AND removed_at IS NULL ORDER BY created_at, id",
        [caller.tenantId],
      );
      return rows.map((row) => ({ ...row, created_at: row.created_at.toISOString() }));
    },

    /** Adds a member while seats remain; the tier's seat count is the cap. */
    async addMember(caller: Caller, input: { email: string; role: Role }) {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        const tenant = await loadTenant(client, caller.tenantId, true);
        const full = seatsTaken(await countActiveMembers(client, caller.tenantId), tenant);
        if (full) {
          throw new ApiError("seat_limit_reached", full);
        }
        const id = newId("mem");
        const createdAt = now();
        try {
          await client.query(
            "INSERT INTO members (id, tenant_id, email, role, created_at) VALUES ($1, $2, $3, $4, $5)",
            [id, caller.tenantId, input.email, input.role, createdAt],
          );
        } catch (error) {
          if ((error as { code?: string }).code === "23505") {
            throw new ApiError("conflict", `${input.email} is already a member`);
          }
          throw error;
        }
        return { id, email: input.email, role: input.role, created_at: createdAt.toISOString() };
      });
    },

    /**
     * Removes a member; the last admin cannot be removed. Keys belong to the tenant, not to a
     * user, so the keys the member issued keep working unless `revokeKeys` asks, as a separate
     * choice, to revoke them too.
     */
    async removeMember(
      caller: Caller,
      memberId: string,
      options: { revokeKeys: boolean },
    ): Promise<{ revokedKeyHashes: string[] }> {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        await keepLastAdmin(client, caller, memberId);
        await client.query("UPDATE members SET removed_at = now() WHERE id = $1", [memberId]);
        const revokedKeyHashes = options.revokeKeys
          ? await revokeKeysOf(deps, client, caller, memberId)
          : [];
        return { revokedKeyHashes };
      });
    },
  };
}
