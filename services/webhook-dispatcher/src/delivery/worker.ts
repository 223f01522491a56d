import { randomUUID } from "node:crypto";
import type { Pool } from "@th/db";
import type { LeadViewMeter } from "@th/quota";
import type { OutboxRelay } from "@th/service-kit";
import type { Logger } from "@th/telemetry";
import { type ClaimedRow, claimDeliveries } from "../db/deliveries.ts";
import { type Share, WHOLE } from "../domain/shard.ts";
import { attemptDelivery } from "./attempt.ts";
import { type BatchDeps, runBatch, sendRow } from "./batch.ts";
import type { TenantSlots } from "./concurrency.ts";
import { createInFlight } from "./in-flight.ts";
import { createWebhookViews } from "./lead-views.ts";
import { createLeases } from "./leases.ts";
import { createOutcomeWriter } from "./outcome-writer.ts";
import { createReadyQueues } from "./ready.ts";
import { createAttemptRecorder } from "./recorder.ts";
import { createOutboxFlusher, createScheduler, type PollOutcome } from "./scheduler.ts";
import type { SecretStore } from "./secret-store.ts";
import type { Sender } from "./sender.ts";
import { createSlotGate } from "./slot-gate.ts";

export interface WorkerOptions {
  pool: Pool;
  logger: Logger;
  sender: Sender;
  slots: TenantSlots;
  secrets: SecretStore;
  meter: LeadViewMeter;
  relay: OutboxRelay;
  leaseMs: number;
  pollMs: number;
  maxInFlight: number;
  retrySweepGraceMs: number;
  longDelayScale: number;
  defaultConcurrency: number;
  now: () => number;
  /** The tenants this instance claims first (all of them when alone). */
  share?: () => Share;
  /**
   * Whether an idle instance claims other members' tenants too (the default). Off only in the
   * scale-out bench's control, where the other members must stay idle.
   */
  helpOthers?: boolean;
  /** After each recorded attempt: its outcome, number and how long the receiver took. */
  onAttempt?: (outcome: string, attempt: number, durationMs: number) => void;
}

const CLAIM_BATCH = 256;
/**
 * A claim leases up to this many times a tenant's cap (counting what the process holds), so
 * the rows beyond its free slots wait in memory for the next freed slot (decision 0290).
 */
const QUEUE_DEPTH = 2;

/**
 * Runs deliveries out of Postgres. Consumers only insert rows and commit, so a slow receiver
 * never holds a Kafka partition. Each instance claims due rows in batches with a lease (a token
 * and an expiry), up to twice each tenant's cap; reserves the batch's lead-views (one
 * reservation per tenant); queues the rows by tenant, each sent once a slot of its tenant is free
 * in Redis (one call per tenant for what is free, again as slots are freed); sends each delivery
 * in its own span of the delivery's trace, and records attempts in groups: the attempt, the new
 * state and the events (through the outbox; a delivered attempt's lead-view among them) in one
 * statement guarded by each delivery's lease token. Views no attempt delivered go back to the quota. A
 * crashed instance's leases expire and another instance picks its rows up: at-least-once, and a
 * repeat carries the same webhook id.
 */
export function createWorker(options: WorkerOptions) {
  const { pool, logger, now } = options;
  const helpOthers = options.helpOthers ?? true;
  // A claim statement costs about the same for a few rows as for a batch (it also steps over the
  // tenants' leased rows), so a busy worker waits for this much room before claiming again.
  const minRoom = Math.max(1, Math.min(CLAIM_BATCH / 4, Math.floor(options.maxInFlight / 4)));
  const batches = new Set<Promise<void>>();
  const scheduler = createScheduler({ pollMs: options.pollMs, now, logger, poll });
  const flusher = createOutboxFlusher({ relay: options.relay, logger });
  const inFlight = createInFlight({
    maxInFlight: options.maxInFlight,
    minRoom,
    onRoom: () => scheduler.wakeSoon(),
  });
  const gate = createSlotGate({
    slots: options.slots,
    defaultConcurrency: options.defaultConcurrency,
    onFreed: (rows) => rows.forEach(inFlight.unhold),
    onReleased: (tenantIds) => ready.freed(tenantIds),
  });
  const leases = createLeases({ pool, now, inFlight, flusher });
  const views = createWebhookViews({
    meter: options.meter,
    logger,
    now,
    parkEach: leases.parkEach,
  });
  const outcomes = createOutcomeWriter({
    recorder: createAttemptRecorder({ pool }),
    views,
    logger,
    now,
    longDelayScale: options.longDelayScale,
    flusher,
    wakeAt: (at) => scheduler.wakeAt(at),
    onAttempt: options.onAttempt,
  });
  const ready = createReadyQueues({
    gate,
    logger,
    now,
    // Well inside the row's lease, so a row sent late is still this process's to record.
    maxWaitMs: Math.floor(options.leaseMs / 4),
    send: (row) => sendRow(batchDeps, row),
    giveBack: async (rows, delayMs) => {
      for (const row of rows) {
        views.settle(row, false);
      }
      await leases.release(rows, delayMs);
    },
    onDrained: () => scheduler.wakeSoon(),
  });
  const batchDeps: BatchDeps = {
    logger,
    now,
    inFlight,
    leases,
    gate,
    views,
    ready,
    attempt: (row: ClaimedRow, answered: () => void) =>
      attemptDelivery(options, row, answered, (sent) => outcomes.record(row, sent)),
  };

  /** Claims what there is room for and starts its batch; answers what the claim came to. */
  async function poll(): Promise<PollOutcome> {
    const room = inFlight.room();
    if (room < minRoom) {
      return "busy";
    }
    const limit = Math.min(room, CLAIM_BATCH);
    const share = options.share?.() ?? WHOLE;
    let rows = await claim(limit, share);
    if (rows.length === 0 && inFlight.count() === 0 && share.count > 1 && helpOthers) {
      // Nothing of its own tenants is due and nothing is in flight: it helps with the
      // others' (a burst that hashed unevenly, a member that left without a word).
      rows = await claim(limit, WHOLE);
    }
    if (rows.length > 0) {
      inFlight.hold(rows);
      const batch: Promise<void> = runBatch(batchDeps, rows)
        .catch((error: unknown) => {
          logger.error({ err: error, deliveries: rows.length }, "delivery batch failed");
        })
        .finally(() => batches.delete(batch));
      batches.add(batch);
    }
    return rows.length === limit ? "full" : rows.length > 0 ? "some" : "empty";
  }

  function claim(limit: number, share: Share): Promise<ClaimedRow[]> {
    return claimDeliveries(pool, {
      now: new Date(now()),
      limit,
      held: inFlight.byTenant(),
      defaultConcurrency: options.defaultConcurrency,
      depth: QUEUE_DEPTH,
      retrySweepGraceMs: options.retrySweepGraceMs,
      leaseMs: options.leaseMs,
      share,
    });
  }

  return {
    wake: scheduler.wake,
    wakeAt: scheduler.wakeAt,
    start: scheduler.start,
    /** Stops claiming; waits (at most `graceMs`) for attempts in flight to be recorded. */
    async stop(graceMs = 15_000) {
      scheduler.stop();
      flusher.stop();
      await Promise.race([
        Promise.allSettled([...batches]).then(() => ready.close()),
        new Promise((resolve) => setTimeout(resolve, graceMs)),
      ]);
    },
    inFlight: () => inFlight.count(),
    instanceId: randomUUID(),
  };
}

export type Worker = ReturnType<typeof createWorker>;
