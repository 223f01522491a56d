// The endpoint_secrets table: sealed secrets, one signing (the newest unretired), the retired
// ones kept for the record.
import type { Pool, PoolClient } from "@th/db";
import type { SealedSecret } from "../domain/secrets.ts";

type Queryable = Pool | PoolClient;

export async function insertSecret(
  db: Queryable,
  endpointId: string,
  sealed: SealedSecret,
): Promise<void> {
  await db.query(
    "INSERT INTO endpoint_secrets (endpoint_id, key_id, nonce, sealed) VALUES ($1, $2, $3, $4)",
    [endpointId, sealed.keyId, sealed.nonce, sealed.sealed],
  );
}

/** Every secret of the endpoint still signing at `at` stops signing at `at`. */
export async function retireSecrets(db: Queryable, endpointId: string, at: Date): Promise<void> {
  await db.query(
    `UPDATE endpoint_secrets SET retires_at = $2
      WHERE endpoint_id = $1 AND (retires_at IS NULL OR retires_at > $2)`,
    [endpointId, at],
  );
}

/** The newest secret still signing at `at`, sealed as stored. */
export async function selectSigningSecret(
  db: Queryable,
  endpointId: string,
  at: Date,
): Promise<SealedSecret | undefined> {
  const { rows } = await db.query<{ key_id: string; nonce: Buffer; sealed: Buffer }>(
    `SELECT key_id, nonce, sealed FROM endpoint_secrets
      WHERE endpoint_id = $1 AND (retires_at IS NULL OR retires_at > $2)
      ORDER BY id DESC LIMIT 1`,
    [endpointId, at],
  );
  const row = rows[0];
  return row ? { keyId: row.key_id, nonce: row.nonce, sealed: row.sealed } : undefined;
}

/**
 * Whether the endpoint has an unretired secret created after `revokedAt`, counting a secret from
 * that same millisecond as from before it.
 */
export async function hasSecretCreatedAfter(
  db: Queryable,
  endpointId: string,
  revokedAt: Date,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `SELECT 1 FROM endpoint_secrets WHERE endpoint_id = $1
       AND date_trunc('milliseconds', created_at) > $2 AND retires_at IS NULL`,
    [endpointId, revokedAt],
  );
  return (rowCount ?? 0) > 0;
}
