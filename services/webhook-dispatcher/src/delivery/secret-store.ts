import type { Pool, PoolClient } from "@th/db";
import { generateSecret, type SecretBox } from "../domain/secrets.ts";

const CACHE_MS = 1_000;

/**
 * Endpoint secrets: sealed at rest, opened for signing. A secret signs until its `retires_at`;
 * a rotation gives the previous ones a retirement `overlapSeconds` ahead, so both sign meanwhile.
 * Signing secrets are cached for a second per process.
 */
export function createSecretStore(options: {
  pool: Pool;
  box: SecretBox;
  overlapSeconds: number;
  now: () => number;
}) {
  const cache = new Map<string, { secrets: string[]; until: number }>();
  // Every attempt of a busy endpoint misses at once when its entry expires; they share one read
  // (and one decryption) instead of each querying.
  const loading = new Map<string, Promise<string[]>>();

  async function insert(client: Pool | PoolClient, endpointId: string): Promise<string> {
    const secret = generateSecret();
    const sealed = options.box.seal(endpointId, secret);
    await client.query(
      "INSERT INTO endpoint_secrets (endpoint_id, key_id, nonce, sealed) VALUES ($1, $2, $3, $4)",
      [endpointId, sealed.keyId, sealed.nonce, sealed.sealed],
    );
    forget(endpointId);
    return secret;
  }

  function forget(endpointId: string) {
    cache.delete(endpointId);
    loading.delete(endpointId);
  }

  async function load(endpointId: string, now: number): Promise<string[]> {
    const { rows } = await options.pool.query<{ key_id: string; nonce: Buffer; sealed: Buffer }>(
      `SELECT key_id, nonce, sealed FROM endpoint_secrets
        WHERE endpoint_id = $1 AND (retires_at IS NULL OR retires_at > $2)
        ORDER BY id DESC`,
      [endpointId, new Date(now)],
    );
    return rows.map((row) =>
      options.box.open(endpointId, { keyId: row.key_id, nonce: row.nonce, sealed: row.sealed }),
    );
  }

  return {
    /** A fresh secret for a new endpoint; returned once. */
    create: insert,

    /**
     * A new secret; the ones signing now retire after the overlap (`hard`: at once, for a
     * suspected compromise). Returns the secret and when the previous ones stop signing.
     */
    async rotate(
      client: PoolClient,
      endpointId: string,
      mode: { hard: boolean },
    ): Promise<{ secret: string; previousRetiresAt: Date }> {
      const retiresAt = new Date(options.now() + (mode.hard ? 0 : options.overlapSeconds * 1000));
      await client.query(
        `UPDATE endpoint_secrets SET retires_at = $2
          WHERE endpoint_id = $1 AND (retires_at IS NULL OR retires_at > $2)`,
        [endpointId, retiresAt],
      );
      const secret = await insert(client, endpointId);
      forget(endpointId);
      return { secret, previousRetiresAt: retiresAt };
    },

    /** Secrets that sign now, newest first. */
    async signingSecrets(endpointId: string): Promise<string[]> {
      const now = options.now();
      const hit = cache.get(endpointId);
      if (hit && hit.until > now) {
        return hit.secrets;
      }
      const pending = loading.get(endpointId);
      if (pending) {
        return pending;
      }
      const loaded = load(endpointId, now);
      loading.set(endpointId, loaded);
      try {
        const secrets = await loaded;
        // A rotation while this read ran forgot it: its answer may predate the new secret.
        if (loading.get(endpointId) === loaded) {
          cache.set(endpointId, { secrets, until: now + CACHE_MS });
        }
        return secrets;
      } finally {
        if (loading.get(endpointId) === loaded) {
          loading.delete(endpointId);
        }
      }
    },

    forget,
  };
}

export type SecretStore = ReturnType<typeof createSecretStore>;
