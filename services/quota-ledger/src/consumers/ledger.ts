import { type Bus, done, on, onBatch, type RunningConsumer } from "@th/bus";
import { contracts } from "@th/contracts";
import type { Ledger } from "../db/ledger.ts";
import type { Tenants } from "../db/tenants.ts";

/** The live ledger's consumer group; its offsets say how far the ledger has read. */
export const LEDGER_GROUP = "quota-ledger.ledger";
const TENANTS_GROUP = "quota-ledger.tenants";
const VOIDS_GROUP = "quota-ledger.voids";

/**
 * Lead-views go into the ledger a fetched batch at a time, in one call (the batches of the
 * partitions handled together share it, and a fetch waits for `minBytes` up to `maxWaitMs`, so
 * under load a call carries many views; offsets are committed at most every `commitIntervalMs`,
 * not after each batch): each row is
 * idempotent on its own (the dedupe key is the primary key), so at-least-once delivery needs no
 * record of processed events, and a redelivered batch changes nothing. All of a tenant's views
 * share a partition, so partitions run side by side without two writers ever racing for one
 * tenant's counter.
 */
export function consumeLeadViews(
  bus: Bus,
  ledger: Ledger,
  options: {
    partitionsConsumedConcurrently: number;
    minBytes?: number;
    maxWaitMs?: number;
    commitIntervalMs?: number;
  },
): Promise<RunningConsumer> {
  return bus.consume({
    group: LEDGER_GROUP,
    partitionsConsumedConcurrently: options.partitionsConsumedConcurrently,
    ...(options.minBytes ? { minBytes: options.minBytes } : {}),
    ...(options.maxWaitMs ? { maxWaitTimeInMs: options.maxWaitMs } : {}),
    ...(options.commitIntervalMs ? { commitIntervalMs: options.commitIntervalMs } : {}),
    subscriptions: [
      onBatch(contracts.leadViewRecorded, async (records) => {
        await ledger.recordBatch(
          records.map(({ value, partition, offset }) => ({
            view: value,
            position: { partition, offset },
          })),
        );
        return undefined;
      }),
    ],
  });
}

/**
 * Voided reads (leadview.voided): their views are taken out of the ledger, or kept out of it when
 * the void is read first. Applying a void twice changes nothing, so a redelivered batch is safe.
 */
export function consumeLeadViewVoids(bus: Bus, ledger: Ledger): Promise<RunningConsumer> {
  return bus.consume({
    group: VOIDS_GROUP,
    subscriptions: [
      onBatch(contracts.leadViewVoided, async (records) => {
        await ledger.voidBatch(records.map(({ value }) => value));
        return undefined;
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
