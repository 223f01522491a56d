import { tierOpens } from "@th/billing";
import type { Logger } from "@th/telemetry";
import type { ClaimedRow } from "../db/deliveries.ts";
import type { InFlight } from "./in-flight.ts";
import type { WebhookViews } from "./lead-views.ts";
import type { Leases } from "./leases.ts";
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
  /** Sends and records one row; calls `answered` once the receiver answered. */
  attempt: (row: ClaimedRow, answered: () => void) => Promise<void>;
}

/**
 * One claimed batch: the rows that need no attempt are settled; the others take their tenants'
 * slots (one call per tenant, pipelined) and their lead-views (one reservation per tenant, one
 * transaction for the batch); then each is sent and recorded on its own. Every row of the batch
 * ends in `finished` exactly once, whatever fails.
 */
export async function runBatch(deps: BatchDeps, rows: ClaimedRow[]): Promise<void> {
  const { leases, inFlight } = deps;
  const now = deps.now();
  const settled: Promise<unknown>[] = [];
  const toParkUnknown: ClaimedRow[] = [];
  const toParkTier: ClaimedRow[] = [];
  const byTenant = new Map<string, ClaimedRow[]>();
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
    } else {
      const list = byTenant.get(row.tenant_id) ?? [];
      list.push(row);
      byTenant.set(row.tenant_id, list);
    }
  }
  settled.push(leases.park(toParkUnknown, "tenant_unknown", new Date(now + PARK_RECHECK_MS)));
  settled.push(leases.park(toParkTier, "tier_without_webhooks", new Date(now + PARK_RECHECK_MS)));
  settled.push(deliver(deps, [...byTenant.values()]));
  const failures = (await Promise.allSettled(settled)).filter(
    (result) => result.status === "rejected",
  );
  for (const failure of failures) {
    deps.logger.warn({ err: failure.reason }, "settling claimed deliveries failed; leases expire");
  }
}

/** Rows grouped by tenant: slots, then lead-views, then the attempts. */
async function deliver(deps: BatchDeps, tenants: ClaimedRow[][]): Promise<void> {
  if (tenants.length === 0) {
    return;
  }
  const { gate, views, leases } = deps;
  const all = tenants.flat();
  // Slots and lead-views are asked for at once (one Redis round trip, not two, before a body
  // leaves). The claim leased no more rows than the tenant's free slots as this process knows
  // them, so views reserved for rows that then get no slot are few; they go back.
  const [slotResults, reserved] = await Promise.all([
    Promise.allSettled(tenants.map((rows) => gate.acquire(rows))),
    views.reserve(all).then(
      (rows) => ({ ok: true as const, rows }),
      (error: unknown) => ({ ok: false as const, error }),
    ),
  ]);
  const slotted = slotResults.flatMap((result) =>
    result.status === "fulfilled" ? result.value : [],
  );
  const slotFailure = slotResults.find((result) => result.status === "rejected");
  if (slotFailure || !reserved.ok) {
    // Slots and views other tenants got in this round go back now rather than when their
    // leases (or the meter's settle window) expire.
    gate.release(slotted);
    for (const row of all) {
      views.settle(row, false);
    }
    await leases.release(all, 1000).catch(() => {});
    throw slotFailure ? slotFailure.reason : (reserved as { error: unknown }).error;
  }
  const sending = new Set(reserved.rows);
  const ready = slotted.filter((row) => sending.has(row));
  const slottedSet = new Set(slotted);
  // Rows that did not come back from the reservation were parked.
  gate.release(slotted.filter((row) => !sending.has(row)));
  const unslotted = reserved.rows.filter((row) => !slottedSet.has(row));
  for (const row of unslotted) {
    views.settle(row, false);
  }
  // Not awaited: the slotted rows' sends do not wait on it. Left leased if this fails: due
  // again when the lease expires.
  const givenBack = leases.release(unslotted, 0).catch(() => {});
  await Promise.all(
    ready.map((row) =>
      // The slot bounds the receiver's concurrency: it is free once the receiver answered,
      // not held through the record's write.
      deps
        .attempt(row, () => gate.release([row]))
        .catch(async (error: unknown) => {
          deps.logger.error({ err: error, delivery_id: row.id }, "delivery attempt failed");
          await leases.release([row], 1000).catch(() => {});
        })
        .finally(() => {
          // An attempt that ended before its outcome was recorded delivered nothing.
          views.settle(row, false);
          gate.release([row]);
          deps.inFlight.finished(row);
        }),
    ),
  );
  await givenBack;
}
