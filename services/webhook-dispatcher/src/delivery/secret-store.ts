import type { Pool, PoolClient } from "@th/db";
import { insertSecret, retireSecrets, selectSigningSecret } from "../db/secrets.ts";
import { generateSecret, type SecretBox } from "../domain/secrets.ts";

const CACHE_MS = 1_000;

/**
 * Endpoint secrets: sealed at rest, opened for signing. Exactly one secret signs, the newest: a
 * rotation retires the previous ones at once, so every delivery carries exactly one `v1=` (the
 * spec's `t=<unix_seconds>,v1=<hex>`, which a receiver written from it reads as one signature).
 * The receiver, not the sender, holds both secrets during its cut-over. Retired rows stay for the
 * record. The signing secret is cached for a second per process.
 */
export function createSecretStore(options: { pool: Pool; box: SecretBox; now: () => number }) {
  const cache = new Map<string, { secret: string; until: number }>();
  // Every attempt of a busy endpoint misses at once when its entry expires; they share one read
  // (and one decryption) instead of each querying.
  const loading = new Map<string, Promise<string>>();

  async function insert(client: Pool | PoolClient, endpointId: string): Promise<string> {
    const secret = generateSecret();
    await insertSecret(client, endpointId, options.box.seal(endpointId, secret));
    forget(endpointId);
    return secret;
  }

  function forget(endpointId: string) {
    cache.delete(endpointId);
    loading.delete(endpointId);
  }

  async function load(endpointId: string, now: number): Promise<string> {
    const sealed = await selectSigningSecret(options.pool, endpointId, new Date(now));
    if (!sealed) {
      throw new Error(`endpoint ${endpointId} has no signing secret`);
    }
    return options.box.open(endpointId, sealed);
  }

  return {
    /** A fresh secret for a new endpoint; returned once. */
    create: insert,

    /**
     * A new secret; the one signing now retires at once, on request and after a suspected
     * compromise alike. Returns the secret and the moment the previous one stopped signing.
     */
    async rotate(
      client: PoolClient,
      endpointId: string,
    ): Promise<{ secret: string; previousRetiresAt: Date }> {
      const retiresAt = new Date(options.now());
      await retireSecrets(client, endpointId, retiresAt);
      const secret = await insert(client, endpointId);
      forget(endpointId);
      return { secret, previousRetiresAt: retiresAt };
    },

    /** The one secret that signs now. */
    async signingSecret(endpointId: string): Promise<string> {
      const now = options.now();
      const hit = cache.get(endpointId);
      if (hit && hit.until > now) {
        return hit.secret;
      }
      const pending = loading.get(endpointId);
      if (pending) {
        return pending;
      }
      const loaded = load(endpointId, now);
      loading.set(endpointId, loaded);
      try {
        const secret = await loaded;
        // A rotation while this read ran forgot it: its answer may predate the new secret.
        if (loading.get(endpointId) === loaded) {
          cache.set(endpointId, { secret, until: now + CACHE_MS });
        }
        return secret;
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
