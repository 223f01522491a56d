import { generateApiKey, hashApiKey, keyHashes, lastFour } from "@th/api-keys";
import { contracts, type KeyRevokeReason } from "@th/contracts";
import { inTransaction, type PoolClient } from "@th/db";
import { ApiError, enqueueEvent } from "@th/service-kit";
import { type KeyRow, keyIssuedEvent, keyRevokedEvent, keyView } from "../domain/api-keys.ts";
import { newId } from "../domain/ids.ts";
import { type TenantJson, tenantChangedEvent, tenantFromJson } from "../domain/tenants.ts";
import { type AccountsDeps, type Caller, requireAdmin } from "./tenant-rows.ts";

type KeyDeps = Pick<AccountsDeps, "peppers" | "now">;

/**
 * Issues a key to a member; the secret is returned once and only its hash is kept. `replaces`
 * names the key a rotation issues this one to replace.
 */
export async function insertKey(
  deps: KeyDeps,
  client: PoolClient,
  tenantId: string,
  memberId: string,
  label: string,
  replaces: string | null = null,
) {
  const secret = generateApiKey();
  const issuedAt = deps.now();
  const row: KeyRow = {
    id: newId("key"),
    tenant_id: tenantId,
    member_id: memberId,
    label,
    key_hash: hashApiKey(secret, deps.peppers.current.key),
    last4: lastFour(secret),
    created_at: issuedAt,
    revoked_at: null,
    replaces_key_id: replaces,
  };
  await client.query(
    `INSERT INTO api_keys (id, tenant_id, member_id, label, key_hash, last4, created_at,
                           pepper_version, replaces_key_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      row.id,
      tenantId,
      memberId,
      label,
      row.key_hash,
      row.last4,
      issuedAt,
      deps.peppers.current.version,
      replaces,
    ],
  );
  await enqueueEvent(client, contracts.keyIssued, keyIssuedEvent(row));
  return { ...keyView(row, issuedAt), secret };
}

/** Revokes the given keys and announces each revocation with its reason. */
export async function revokeRows(
  deps: Pick<AccountsDeps, "now">,
  client: PoolClient,
  rows: KeyRow[],
  caller: Caller | null,
  reason: KeyRevokeReason,
): Promise<void> {
  const revokedAt = deps.now();
  const revokedBy = caller?.memberId ?? null;
  for (const row of rows) {
    await client.query(
      "UPDATE api_keys SET revoked_at = $2, revoked_by = $3, revoke_reason = $4 WHERE id = $1",
      [row.id, revokedAt, revokedBy, reason],
    );
    await enqueueEvent(
      client,
      contracts.keyRevoked,
      keyRevokedEvent(row, revokedBy, reason, revokedAt),
    );
  }
}

/**
 * The first step of a two-step rotation: a new key, labelled as the old one and naming it, while
 * the old one keeps working until it is revoked (the second step, once the new key is deployed).
 * A revoked key, or one whose replacement is already issued and active, is 409.
 */
async function rotateKey(deps: AccountsDeps, caller: Caller, keyId: string) {
  return inTransaction(deps.pool, async (client) => {
    await requireAdmin(client, caller);
    const { rows } = await client.query<KeyRow & { replaced_by: string | null }>(
      `SELECT k.*, (SELECT r.id FROM api_keys r
                     WHERE r.replaces_key_id = k.id AND r.revoked_at IS NULL LIMIT 1) AS replaced_by
         FROM api_keys k WHERE k.id = $1 AND k.tenant_id = $2 FOR UPDATE`,
      [keyId, caller.tenantId],
    );
    const row = rows[0];
    if (!row) {
      throw new ApiError("not_found", `no API key ${keyId}`);
    }
    if (row.revoked_at !== null) {
      throw new ApiError("conflict", `API key ${keyId} is revoked; issue a new key instead`);
    }
    if (row.replaced_by !== null) {
      throw new ApiError(
        "conflict",
        `API key ${keyId} is already being replaced by ${row.replaced_by}; revoke it once the new key is deployed`,
      );
    }
    return insertKey(deps, client, caller.tenantId, caller.memberId, row.label, row.id);
  });
}

/** API keys: lookup for the gateway, and listing, issuing and revoking for admins. */
export function createKeys(deps: AccountsDeps) {
  const { pool, now } = deps;
  const versions = deps.peppers.all.map((pepper) => pepper.version);

  return {
    /**
     * What the gateway needs to authorize a request carrying this key hash. A hash made with a
     * pepper no longer configured is not found: removing a pepper voids the keys still under it.
     */
    async lookupKey(keyHash: string) {
      const { rows } = await pool.query<KeyRow & { tenant: TenantJson }>(
        `SELECT k.*, row_to_json(t) AS tenant FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
         WHERE k.key_hash = $1 AND k.pepper_version = ANY($2::smallint[])`,
        [keyHash, versions],
      );
      const row = rows[0];
      if (!row) {
        return null;
      }
      return {
        key_id: row.id,
        tenant_id: row.tenant_id,
        member_id: row.member_id,
        revoked: row.revoked_at !== null,
        tenant: tenantChangedEvent(tenantFromJson(row.tenant), now()),
      };
    },

    /**
     * Moves a key hashed under an older listed pepper to the current one, given the key itself
     * (the gateway, which holds it while authenticating, sends it): the hash is recomputed here,
     * never taken from the caller. The caller names the version it holds current; while a
     * rotation rolls out and the two differ, nothing moves. Undefined when no row holds the key
     * under an older pepper.
     */
    async rehashKey(
      secret: string,
      callersCurrent: number,
    ): Promise<{ key_hash: string; pepper_version: number } | undefined> {
      const current = deps.peppers.current;
      if (callersCurrent !== current.version) {
        throw new ApiError(
          "conflict",
          `the current pepper here is version ${current.version}, not ${callersCurrent}`,
        );
      }
      const older = keyHashes(
        secret,
        deps.peppers.all.filter((pepper) => pepper.version !== current.version),
      );
      if (older.length === 0) {
        return undefined;
      }
      const keyHash = hashApiKey(secret, current.key);
      const { rowCount } = await pool.query(
        `UPDATE api_keys k SET key_hash = $1, pepper_version = $2
           FROM unnest($3::text[], $4::smallint[]) AS o (hash, version)
          WHERE k.key_hash = o.hash AND k.pepper_version = o.version`,
        [
          keyHash,
          current.version,
          older.map((each) => each.hash),
          older.map((each) => each.version),
        ],
      );
      return rowCount ? { key_hash: keyHash, pepper_version: current.version } : undefined;
    },

    async listKeys(caller: Caller) {
      await requireAdmin(pool, caller);
      const { rows } = await pool.query<
        KeyRow & { member_removed_at: Date | null; replaced_by_key_id: string | null }
      >(
        `SELECT k.*, m.removed_at AS member_removed_at,
                (SELECT r.id FROM api_keys r
                  WHERE r.replaces_key_id = k.id AND r.revoked_at IS NULL
                  ORDER BY r.created_at DESC LIMIT 1) AS replaced_by_key_id
           FROM api_keys k JOIN members m ON m.id = k.member_id
          WHERE k.tenant_id = $1 ORDER BY k.created_at, k.id`,
        [caller.tenantId],
      );
      const at = now();
      return rows.map((row) =>
        keyView(row, at, {
          memberRemovedAt: row.member_removed_at,
          replacedByKeyId: row.replaced_by_key_id,
        }),
      );
    },

    async issueKey(caller: Caller, label: string) {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        return insertKey(deps, client, caller.tenantId, caller.memberId, label);
      });
    },

    rotateKey: (caller: Caller, keyId: string) => rotateKey(deps, caller, keyId),

    /** Revokes one key of the caller's tenant; another tenant's key is not found. Idempotent. */
    async revokeKey(caller: Caller, keyId: string): Promise<{ keyHash: string }> {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        const { rows } = await client.query<KeyRow>(
          "SELECT * FROM api_keys WHERE id = $1 AND tenant_id = $2 FOR UPDATE",
          [keyId, caller.tenantId],
        );
        const row = rows[0];
        if (!row) {
          throw new ApiError("not_found", `no API key ${keyId}`);
        }
        if (row.revoked_at === null) {
          await revokeRows(deps, client, [row], caller, "manual");
        }
        return { keyHash: row.key_hash };
      });
    },

    /**
     * Suspected compromise: every active key of the tenant is revoked, a fresh key is issued to
     * the caller so they are not locked out, and the revocations carry reason `compromise`,
     * which tells the webhook dispatcher to rotate every signing secret of the tenant.
     */
    async revokeAllForCompromise(caller: Caller) {
      return inTransaction(pool, async (client) => {
        await requireAdmin(client, caller);
        const { rows } = await client.query<KeyRow>(
          "SELECT * FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL FOR UPDATE",
          [caller.tenantId],
        );
        await revokeRows(deps, client, rows, caller, "compromise");
        const apiKey = await insertKey(
          deps,
          client,
          caller.tenantId,
          caller.memberId,
          "issued after compromise",
        );
        return {
          revokedKeyIds: rows.map((row) => row.id),
          revokedKeyHashes: rows.map((row) => row.key_hash),
          apiKey,
        };
      });
    },
  };
}
