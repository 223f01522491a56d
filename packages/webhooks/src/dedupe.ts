/**
 * Remembers webhook ids already handled. Delivery is at-least-once, so the same
 * `X-FLPF-Webhook-Id` can arrive twice (a retry after a lost 200, a replay). Keep ids for at
 * least the retry window plus the 30-day dead-letter hold: about 31 days.
 */
export interface DedupeStore {
  /** True when the id was handled before (and has not expired). */
  has(webhookId: string): Promise<boolean>;
  /** Remembers the id as handled; call it after the delivery's work is done. */
  add(webhookId: string): Promise<void>;
}

export const DEFAULT_DEDUPE_TTL_MS = 31 * 86_400_000;

/**
 * An in-memory store for one process; use a shared store (a database unique key, Redis
 * `SET id 1 NX PX <ttl>`) when several processes receive.
 */
export function createMemoryDedupe(
  options: { ttlMs?: number; now?: () => number } = {},
): DedupeStore & { firstSeen(webhookId: string): Promise<boolean>; size(): number } {
  const ttl = options.ttlMs ?? DEFAULT_DEDUPE_TTL_MS;
  const now = options.now ?? Date.now;
  const seen = new Map<string, number>();
  let writes = 0;
  const has = async (webhookId: string) => (seen.get(webhookId) ?? 0) > now();
  const add = async (webhookId: string) => {
    const at = now();
    if (++writes % 1024 === 0) {
      for (const [id, expires] of seen) {
        if (expires <= at) {
          seen.delete(id);
        }
      }
    }
    seen.set(webhookId, at + ttl);
  };
  return {
    has,
    add,
    /** Check and remember in one step, for handlers whose work cannot fail. */
    async firstSeen(webhookId) {
      if (await has(webhookId)) {
        return false;
      }
      await add(webhookId);
      return true;
    },
    size: () => seen.size,
  };
}
