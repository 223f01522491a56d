import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { decodeKey } from "@th/config";

/** `whsec_` + 32 random bytes in base64url: the per-endpoint signing secret. */
export function generateSecret(): string {
  return `whsec_${randomBytes(32).toString("base64url")}`;
}

export interface SealedSecret {
  keyId: string;
  nonce: Buffer;
  /** Ciphertext followed by the 16-byte GCM tag. */
  sealed: Buffer;
}

/**
 * AES-256-GCM under a key ring parsed from `SECRET_KEYS` (`id:key,…`). The first key seals; any
 * key of the ring opens, so the key can rotate without re-encrypting at once. The endpoint id is
 * bound as associated data, so a sealed secret cannot be moved to another endpoint's row.
 */
export function createSecretBox(ring: string) {
  const keys = new Map<string, Buffer>();
  let current: string | undefined;
  for (const pair of ring.split(",")) {
    const at = pair.indexOf(":");
    const id = pair.slice(0, at);
    const key = decodeKey(pair.slice(at + 1));
    if (!key) {
      throw new Error(`secret key ${id} is not 32 bytes`);
    }
    keys.set(id, key);
    current ??= id;
  }
  if (!current) {
    throw new Error("SECRET_KEYS is empty");
  }
  const currentId = current;
  return {
    seal(endpointId: string, secret: string): SealedSecret {
      const key = keys.get(currentId) as Buffer;
      const nonce = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, nonce);
      cipher.setAAD(Buffer.from(endpointId));
      const sealed = Buffer.concat([
        cipher.update(secret, "utf8"),
        cipher.final(),
        cipher.getAuthTag(),
      ]);
      return { keyId: currentId, nonce, sealed };
    },
    open(endpointId: string, sealed: SealedSecret): string {
      const key = keys.get(sealed.keyId);
      if (!key) {
        throw new Error(`secret sealed with unknown key ${sealed.keyId}`);
      }
      const decipher = createDecipheriv("aes-256-gcm", key, sealed.nonce);
      decipher.setAAD(Buffer.from(endpointId));
      decipher.setAuthTag(sealed.sealed.subarray(sealed.sealed.length - 16));
      return Buffer.concat([
        decipher.update(sealed.sealed.subarray(0, sealed.sealed.length - 16)),
        decipher.final(),
      ]).toString("utf8");
    },
  };
}

export type SecretBox = ReturnType<typeof createSecretBox>;
