import type { ClaimedRow } from "../db/deliveries.ts";
import type { TenantSlots } from "./concurrency.ts";

/**
 * The claimed rows' tenant slots: taken in one call per tenant, freed (once per row) in one call
 * per tenant for everything finished in a turn.
 */
export function createSlotGate(options: {
  slots: TenantSlots;
  defaultConcurrency: number;
  /** Rows whose slots were just freed: they no longer count against their tenant. */
  onFreed: (rows: readonly ClaimedRow[]) => void;
  /**
   * Tenants whose freed slots were just given back in Redis: a take sent after this runs
   * behind the release on the connection, so it finds the slots free.
   */
  onReleased?: (tenantIds: readonly string[]) => void;
}) {
  const slotReleases = new Map<string, string[]>();
  const slotFreed = new WeakSet<ClaimedRow>();

  return {
    /** Takes the tenant's slots for its rows in order; answers the rows that got one. */
    async acquire(rows: ClaimedRow[]): Promise<ClaimedRow[]> {
      const first = rows[0] as ClaimedRow;
      const cap = Math.max(1, first.concurrent_webhooks ?? options.defaultConcurrency);
      const taken = await options.slots.acquire(
        first.tenant_id,
        rows.map((row) => row.lease_token),
        cap,
      );
      return rows.slice(0, taken);
    },

    /** Frees tenant slots (once each) in one call per tenant for everything finished this turn. */
    release(all: readonly ClaimedRow[]) {
      const rows = all.filter((row) => !slotFreed.has(row));
      if (rows.length === 0) {
        return;
      }
      for (const row of rows) {
        slotFreed.add(row);
      }
      options.onFreed(rows);
      const wasEmpty = slotReleases.size === 0;
      for (const row of rows) {
        const list = slotReleases.get(row.tenant_id) ?? [];
        list.push(row.lease_token);
        slotReleases.set(row.tenant_id, list);
      }
      if (wasEmpty) {
        setImmediate(() => {
          const pending = [...slotReleases];
          slotReleases.clear();
          for (const [tenantId, members] of pending) {
            // A slot not given back here expires with its lease.
            options.slots.release(tenantId, members).catch(() => {});
          }
          options.onReleased?.(pending.map(([tenantId]) => tenantId));
        });
      }
    },
  };
}

export type SlotGate = ReturnType<typeof createSlotGate>;
