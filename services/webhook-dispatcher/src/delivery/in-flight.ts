import type { ClaimedRow } from "../db/deliveries.ts";

/**
 * Claimed deliveries not yet finished, in total and per tenant: the room left for the next claim,
 * and what each tenant already holds in this process (the claim counts it against the tenant's
 * cap). `onRoom` is called when finished rows bring the room back to `minRoom`: below it a claim
 * waits; above it, claims follow the tenants' queues running dry (`ready.ts`), not each row.
 */
export function createInFlight(options: {
  maxInFlight: number;
  /** A claim waits for this much room. */
  minRoom: number;
  onRoom: () => void;
}) {
  let claimed = 0;
  const claimedByTenant = new Map<string, number>();
  const done = new WeakSet<ClaimedRow>();
  const unheld = new WeakSet<ClaimedRow>();

  const room = () => options.maxInFlight - claimed;

  /**
   * The row no longer counts against its tenant's cap in this process's claims: finished, or
   * answered (its slot is free while its record is written).
   */
  function unhold(row: ClaimedRow) {
    if (unheld.has(row)) {
      return;
    }
    unheld.add(row);
    const left = (claimedByTenant.get(row.tenant_id) ?? 1) - 1;
    if (left > 0) {
      claimedByTenant.set(row.tenant_id, left);
    } else {
      claimedByTenant.delete(row.tenant_id);
    }
  }

  return {
    room,
    count: () => claimed,
    /** Claimed rows held by this process, by tenant. */
    byTenant: (): ReadonlyMap<string, number> => claimedByTenant,
    hold(rows: readonly ClaimedRow[]) {
      claimed += rows.length;
      for (const row of rows) {
        claimedByTenant.set(row.tenant_id, (claimedByTenant.get(row.tenant_id) ?? 0) + 1);
      }
    },
    unhold,
    /** A claimed row is finished (recorded, released, parked or lost); room for another. */
    finished(row: ClaimedRow) {
      if (done.has(row)) {
        return;
      }
      done.add(row);
      const before = room();
      claimed--;
      unhold(row);
      if (before < options.minRoom && room() >= options.minRoom) {
        options.onRoom();
      }
    },
  };
}

export type InFlight = ReturnType<typeof createInFlight>;
