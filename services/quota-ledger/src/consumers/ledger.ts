import { type Bus, done, on, type RunningConsumer } from "@th/bus";
import { contracts } from "@th/contracts";
import type { Ledger } from "../db/ledger.ts";
import type { Tenants } from "../db/tenants.ts";

/** The live ledger's consumer group; its offsets say how far the ledger has read. */
export const LEDGER_GROUP = "quota-ledger.ledger";
export const TENANTS_GROUP = "quota-ledger.tenants";

/**
 * Lead-views go into the ledger one record at a time: each insert is idempotent on its own
 * (the dedupe key is the primary key), so at-least-once delivery needs no processed_events row.
 * All of a tenant's views share a partition, so partitions run side by side without two
 * writers ever racing for one tenant's counter.
 */
export function consumeLeadViews(
  bus: Bus,
  ledger: Ledger,
  options: { partitionsConsumedConcurrently: number },
): Promise<RunningConsumer> {
  return bus.consume({
    group: LEDGER_GROUP,
    partitionsConsumedConcurrently: options.partitionsConsumedConcurrently,
    subscriptions: [
      on(contracts.leadViewRecorded, async ({ value, partition, offset }) => {
        await ledger.record(value, { partition, offset });
        return done;
      }),
    ],
  });
}

/** The tier, cap and anniversary of each tenant; the highest revision wins, whatever the order. */
export function consumeTenantChanges(bus: Bus, tenants: Tenants): Promise<RunningConsumer> {
  return bus.consume({
    group: TENANTS_GROUP,
    subscriptions: [
      on(contracts.tenantChanged, async ({ value }) => {
        await tenants.apply(value);
        return done;
      }),
    ],
  });
}
