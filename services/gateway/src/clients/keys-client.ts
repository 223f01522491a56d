import type { TenantChanged } from "@th/contracts";
import { ApiError, type InternalClient } from "@th/service-kit";

export interface KeyLookup {
  key_id: string;
  tenant_id: string;
  member_id: string;
  revoked: boolean;
  tenant: TenantChanged;
}

export function createKeysClient(upstream: InternalClient) {
  return {
    upstream,
    async lookup(keyHash: string, requestId: string): Promise<KeyLookup | null> {
      const reply = await upstream.send<KeyLookup>("GET", `/internal/v1/keys/by-hash/${keyHash}`, {
        route: "/internal/v1/keys/by-hash/:key_hash",
        requestId,
      });
      if (reply.status === 404) {
        return null;
      }
      if (reply.status !== 200) {
        throw new ApiError("unavailable", "key lookup failed; try again shortly");
      }
      return reply.body;
    },

    /**
     * Asks the keys service to move a key found under an older pepper to the current one
     * (decision 0345); the new hash, or null when there was nothing to move.
     */
    async rehash(
      key: string,
      currentVersion: number,
      requestId: string,
    ): Promise<{ key_hash: string } | null> {
      const reply = await upstream.send<{ key_hash: string }>("POST", "/internal/v1/keys/rehash", {
        body: { key, pepper_version: currentVersion },
        requestId,
      });
      if (reply.status === 404 || reply.status === 409) {
        return null;
      }
      if (reply.status !== 200) {
        throw new Error(`re-hashing a key failed with ${reply.status}`);
      }
      return reply.body;
    },
  };
}

export type KeysClient = ReturnType<typeof createKeysClient>;
