import { done, on, onBatch, retryLater, type Subscription } from "@th/bus";
import { contracts, type DeliveryRetry, deliveryRetryLadder } from "@th/contracts";
import type { Pool } from "@th/db";
import type { Logger } from "@th/telemetry";
import { pendRetry, unparkTenant } from "../db/deliveries.ts";
import { applyTenantChange } from "../db/tenants.ts";
import type { Worker } from "../delivery/worker.ts";
import type { EndpointService } from "../endpoints/service.ts";
import { intakeMatches } from "./intake.ts";

/** Retry records are handed to the scheduler this long before they are due. */
const RETRY_HANDOFF_LEAD_MS = 300;

/**
 * `match.found`: one delivery row per subscribed endpoint, body fixed now and the record's trace
 * context kept, for a whole fetched batch in one statement (see `intake.ts`). Nothing is sent
 * here; the handler returns as soon as the rows are durable, so the partition never waits on a
 * receiver.
 */
export function matchSubscriptions(deps: {
  pool: Pool;
  worker: Worker;
  now: () => number;
}): Subscription[] {
  return [
    onBatch(contracts.matchFound, async (records) => {
      if ((await intakeMatches(deps.pool, records, new Date(deps.now()))) > 0) {
        deps.worker.wake();
      }
      return undefined;
    }),
  ];
}

/**
 * The retry topics, one per back-off stage. Every record of a stage waits the same delay, so a
 * partition's records come due in order: the head is held (its partition paused) until shortly
 * before it is due, then handed to the scheduler, which runs the attempt at the exact due time.
 * The record's (attempt, replay) must still be the delivery's next one; otherwise it is stale.
 */
export function retrySubscriptions(deps: {
  pool: Pool;
  worker: Worker;
  now: () => number;
}): Subscription[] {
  const handle = async ({ value }: { value: DeliveryRetry }) => {
    const due = Date.parse(value.due_at);
    const wait = due - deps.now() - RETRY_HANDOFF_LEAD_MS;
    if (wait > 0) {
      return retryLater(wait, "retry not due yet");
    }
    const pending = await pendRetry(deps.pool, {
      id: value.delivery_id,
      attempts: value.attempt - 1,
      replayNo: value.replay_no,
      dueAt: new Date(due),
    });
    if (pending) {
      deps.worker.wakeAt(due);
    }
    return done;
  };
  return deliveryRetryLadder.map((stage) => on(stage.contract, handle));
}

/**
 * `tenant.changed` (highest revision wins) keeps tier, status, cap, anniversary and the
 * concurrent-webhooks figure; a newer revision releases the tenant's parked deliveries (an
 * upgrade, a raised cap, a reactivation). `key.revoked` with reason `compromise` rotates every
 * endpoint secret of the tenant.
 */
export function tenantSubscriptions(deps: {
  pool: Pool;
  worker: Worker;
  endpoints: EndpointService;
  logger: Logger;
}): Subscription[] {
  return [
    on(contracts.tenantChanged, async ({ value }) => {
      if (
        (await applyTenantChange(deps.pool, value)) &&
        (await unparkTenant(deps.pool, value.tenant_id)) > 0
      ) {
        deps.worker.wake();
      }
      return done;
    }),
    on(contracts.keyRevoked, async ({ value }) => {
      if (value.reason !== "compromise") {
        return done;
      }
      const rotated = await deps.endpoints.rotateAfterCompromise(
        value.tenant_id,
        new Date(value.revoked_at),
      );
      if (rotated > 0) {
        deps.logger.warn(
          { tenant_id: value.tenant_id, endpoints: rotated },
          "compromise reported: every webhook secret of the tenant rotated",
        );
      }
      return done;
    }),
  ];
}
