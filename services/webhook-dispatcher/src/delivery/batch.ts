import { tierOpens } from "@th/billing";
import type { Logger } from "@th/telemetry";
import type { ClaimedRow } from "../db/deliveries.ts";
import type { InFlight } from "./in-flight.ts";
import type { WebhookViews } from "./lead-views.ts";
import type { Leases } from "./leases.ts";
import type { ReadyQueues } from "./ready.ts";
import type { SlotGate } from "./slot-gate.ts";

/** Parked until tenant.changed names the tenant again (or this long, then checked again). */
const PARK_RECHECK_MS = 3_600_000;

/** What a claimed batch is run with. */
export interface BatchDeps {
  logger: Logger;
  now: () => number;
  inFlight: InFlight;
  leases: Leases;
  gate: SlotGate;
  views: WebhookViews;
  ready: Pick<ReadyQueues, "add">;
  /** Sends and records one row; calls `answered` once the receiver answered. */
  attempt: (row: ClaimedRow, answered: () => void) => Promise<void>;
}

/**
 * One claimed batch: the rows that need no attempt are settled; the others reserve their
 * lead-views (one reservation per tenant) and join their tenants' ready queues, which send each
 * as a slot of its tenant is free. Every row of the batch ends in `finished` exactly once,
 * whatever fails.
 */
export async function runBatch(deps: BatchDeps, rows: ClaimedRow[]): Promise<void> {
  const { leases, inFlight } = deps;
  const now = deps.now();
  const settled: Promise<unknown>[] = [];
  const toParkUnknown: ClaimedRow[] = [];
  const toParkTier: ClaimedRow[] = [];
  const toParkSuspended: ClaimedRow[] = [];
  const toSend: ClaimedRow[] = [];
  for (const row of rows) {
    if (row.state === "exhausted") {
      settled.push(
        leases.deadLetter(row, "attempts_exhausted").finally(() => inFlight.finished(row)),
      );
    } else if (row.endpoint_deleted_at) {
      settled.push(
        leases.deadLetter(row, "endpoint_removed").finally(() => inFlight.finished(row)),
      );
    } else if (!row.tier || row.lead_views_per_month === null) {
      toParkUnknown.push(row);
    } else if (!tierOpens(row.tier, "webhooks") || row.status === "cancelled") {
      toParkTier.push(row);
    } else if (row.status === "suspended") {
      // A suspended tenant's payment is overdue: its deliveries wait, released when it pays.
      toParkSuspended.push(row);
    } else {
      toSend.push(row);
    }
  }
  settled.push(leases.park(toParkUnknown, "tenant_unknown", new Date(now + PARK_RECHECK_MS)));
  settled.push(leases.park(toParkTier, "tier_without_webhooks", new Date(now + PARK_RECHECK_MS)));
  settled.push(leases.park(toParkSuspended, "tenant_suspended", new Date(now + PARK_RECHECK_MS)));
  settled.push(deliver(deps, toSend));
  const failures = (await Promise.allSettled(settled)).filter(
    (result) => result.status === "rejected",
  );
  for (const failure of failures) {
    deps.logger.warn({ err: failure.reason }, "settling claimed deliveries failed; leases expire");
  }
}

/** The rows to send: their lead-views are reserved, then they wait for their tenants' slots. */
async function deliver(deps: BatchDeps, all: ClaimedRow[]): Promise<void> {
  if (all.length === 0) {
    return;
  }
  let reserved: ClaimedRow[];
  try {
    reserved = await deps.views.reserve(all);
  } catch (error) {
    await deps.leases.release(all, 1000).catch(() => {});
    throw error;
  }
  // Rows that did not come back from the reservation were parked.
  deps.ready.add(reserved);
}

/**
 * Sends one slotted row and settles it, whatever happens: its slot is freed once the receiver
 * answered (it bounds the receiver's concurrency, not the record's write), its view is given
 * back unless the attempt delivered it, and it is finished.
 */
export function sendRow(deps: BatchDeps, row: ClaimedRow): Promise<void> {
  return deps
    .attempt(row, () => deps.gate.release([row]))
    .catch(async (error: unknown) => {
      deps.logger.error({ err: error, delivery_id: row.id }, "delivery attempt failed");
      await deps.leases.release([row], 1000).catch(() => {});
    })
    .finally(() => {
      // An attempt that ended before its outcome was recorded delivered nothing.
      deps.views.settle(row, false);
      deps.gate.release([row]);
      deps.inFlight.finished(row);
    });
}
