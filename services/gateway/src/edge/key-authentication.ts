import { isWellFormedApiKey } from "@th/api-keys";
import { ApiError } from "@th/service-kit";
import type { FastifyRequest } from "fastify";
import type { ClientLimits } from "./client-limits.ts";
import type { EdgeOptions } from "./edge-options.ts";
import type { Authorization } from "./edge-store.ts";

export type Admitted = Extract<Authorization, { kind: "ok" }>;

/** Why a request is refused with 401, as its error detail says. */
interface Refusal {
  refusal: string;
}

const NO_HEADER: Refusal = { refusal: "missing API key: send Authorization: Bearer <key>" };
const NOT_BEARER: Refusal = { refusal: "the Authorization header must be Bearer <key>" };
const MALFORMED: Refusal = { refusal: "malformed API key" };

/** The key an Authorization header carries, or why it carries none the edge accepts. */
export function bearerKey(header: string | undefined): string | Refusal {
  if (!header) {
    return NO_HEADER;
  }
  // HTTP authentication schemes are case-insensitive (RFC 9110 11.1).
  const match = /^Bearer +(\S+)$/i.exec(header);
  if (!match) {
    return NOT_BEARER;
  }
  const key = match[1] ?? "";
  return isWellFormedApiKey(key) ? key : MALFORMED;
}

const KEY_REFUSALS: Partial<Record<Authorization["kind"], string>> = {
  unknown: "unknown API key",
  revoked: "this API key has been revoked",
  inactive: "the subscription of this key's tenant has ended",
};

/** Why a key with this answer is refused with 401; undefined for an answer that is no refusal. */
export function keyRefusal(kind: Authorization["kind"]): string | undefined {
  return KEY_REFUSALS[kind];
}

/** The 503 while Redis holds no answer for a caller the keys service has just described. */
export function rebuilding(): ApiError {
  return new ApiError("unavailable", "authentication state is being rebuilt; try again shortly");
}

type KeyOptions = Pick<EdgeOptions, "store" | "keys" | "hashKey" | "olderPeppers">;

/**
 * API-key authentication: the key from the Authorization header, its answer from Redis (one
 * script call with the tenant's rolling minute), and on a miss one lookup at the keys service.
 */
export function createKeyAuthentication(
  options: KeyOptions,
  now: () => number,
  refuse: ClientLimits["refuse"],
) {
  /** Asks the keys service about a key and caches the answer in Redis. */
  async function refresh(keyHash: string, requestId: string): Promise<void> {
    const found = await options.keys.lookup(keyHash, requestId);
    if (!found) {
      await options.store.putUnknown(keyHash);
      return;
    }
    await options.store.putTenant(found.tenant);
    const record = { tenantId: found.tenant_id, memberId: found.member_id, keyId: found.key_id };
    if (found.revoked) {
      await options.store.markRevoked(keyHash, record);
    } else {
      await options.store.putKey(keyHash, { ...record, revoked: false });
    }
  }

  // When a tenant's cached record expires, every request of its keys misses at once; they wait
  // for one lookup per key instead of each asking the keys service.
  const refreshing = new Map<string, Promise<void>>();

  function refreshOnce(keyHash: string, requestId: string): Promise<void> {
    let pending = refreshing.get(keyHash);
    if (!pending) {
      pending = refresh(keyHash, requestId).finally(() => refreshing.delete(keyHash));
      refreshing.set(keyHash, pending);
    }
    return pending;
  }

  async function resolve(request: FastifyRequest, keyHash: string): Promise<Authorization> {
    let answer = await options.store.authorize(keyHash, now());
    if (answer.kind === "ok" && answer.refreshDue) {
      // The cached tenant record is near its expiry: renewed in the background, so no request
      // of a busy tenant waits for the lookup that would follow its expiry.
      refreshOnce(keyHash, request.id).catch((error: unknown) => {
        request.log.warn({ err: error }, "refreshing a cached tenant record failed");
      });
    }
    if (answer.kind === "miss") {
      await refreshOnce(keyHash, request.id);
      answer = await options.store.authorize(keyHash, now());
      if (answer.kind === "miss") {
        throw rebuilding();
      }
    }
    return answer;
  }

  // One re-hash at a time per key, however many of its requests arrive meanwhile.
  const rehashing = new Map<string, Promise<void>>();

  /**
   * Moves a key found under an older pepper to the current one, in the background: the keys
   * service re-hashes it, then the edge's record follows the new hash and the old one is
   * dropped, so the next request finds the key in one lookup.
   */
  function rehashInBackground(
    request: FastifyRequest,
    key: string,
    oldHash: string,
    found: Admitted,
  ): void {
    const older = options.olderPeppers;
    if (!older || rehashing.has(oldHash)) {
      return;
    }
    const task = options.keys
      .rehash(key, older.currentVersion, request.id)
      .then(async (moved) => {
        if (!moved) {
          return;
        }
        const record = { tenantId: found.tenantId, memberId: found.memberId, keyId: found.keyId };
        await options.store.putKey(moved.key_hash, { ...record, revoked: false });
        await options.store.forgetKey(oldHash);
      })
      .catch((error: unknown) => {
        request.log.warn({ err: error }, "re-hashing a key under the current pepper failed");
      })
      .finally(() => rehashing.delete(oldHash));
    rehashing.set(oldHash, task);
  }

  /**
   * The answer for a key unknown under the current pepper: the first older pepper under which
   * it is known. Only an unknown key is looked for further, so a key revoked under the current
   * pepper stays revoked whatever an older hash of it still says.
   */
  async function resolveUnderOlderPeppers(
    request: FastifyRequest,
    key: string,
  ): Promise<Authorization> {
    for (const older of options.olderPeppers?.hashes(key) ?? []) {
      const answer = await resolve(request, older.hash);
      if (answer.kind === "unknown") {
        continue;
      }
      if (answer.kind === "ok") {
        rehashInBackground(request, key, older.hash, answer);
      }
      return answer;
    }
    return { kind: "unknown" };
  }

  /** The tenant's answer for the request's key; refuses a request without a usable, live key. */
  return async function authenticateKey(
    request: FastifyRequest,
    header: string | undefined,
  ): Promise<Admitted> {
    const key = bearerKey(header);
    if (typeof key !== "string") {
      return refuse(request, key.refusal);
    }
    let answer = await resolve(request, options.hashKey(key));
    if (answer.kind === "unknown" && options.olderPeppers) {
      answer = await resolveUnderOlderPeppers(request, key);
    }
    if (answer.kind === "ok") {
      return answer;
    }
    const refusal = keyRefusal(answer.kind);
    if (refusal !== undefined) {
      return refuse(request, refusal);
    }
    throw rebuilding();
  };
}
