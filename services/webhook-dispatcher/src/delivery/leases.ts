import { contracts, type DeadLetterReason } from "@th/contracts";
import type { Pool } from "@th/db";
import { withExtractedContext } from "@th/telemetry";
import {
  type ClaimedRow,
  deadLetterDelivery,
  parkDeliveries,
  releaseDeliveries,
} from "../db/deliveries.ts";
import { deadLetterEvent } from "../domain/outcome.ts";
import { HOLD_MS } from "../domain/schedule.ts";
import type { InFlight } from "./in-flight.ts";
import type { OutboxFlusher } from "./scheduler.ts";

/**
 * Ends the lease of claimed rows that get no attempt: given back (due again later), parked with
 * a reason, or dead-lettered. Each row released or parked is finished whatever the statement's
 * outcome (a lease left behind expires).
 */
export function createLeases(options: {
  pool: Pool;
  now: () => number;
  inFlight: InFlight;
  flusher: OutboxFlusher;
}) {
  const { pool, inFlight } = options;

  /** Parks claimed rows with their reason, each due again at its own time. */
  async function parkEach(rows: readonly ClaimedRow[], reason: string, until: readonly Date[]) {
    if (rows.length === 0) {
      return;
    }
    try {
      await parkDeliveries(pool, rows, reason, until);
    } finally {
      rows.forEach(inFlight.finished);
    }
  }

  return {
    /** Gives claimed rows back without an attempt, due again after `delayMs`. */
    async release(rows: readonly ClaimedRow[], delayMs: number) {
      if (rows.length === 0) {
        return;
      }
      try {
        await releaseDeliveries(pool, rows, new Date(options.now() + delayMs));
      } finally {
        rows.forEach(inFlight.finished);
      }
    },

    park(rows: readonly ClaimedRow[], reason: string, until: Date) {
      return parkEach(
        rows,
        reason,
        rows.map(() => until),
      );
    },

    parkEach,

    /** Dead-letters a row that is not sent (exhausted, or its endpoint removed). */
    async deadLetter(row: ClaimedRow, reason: DeadLetterReason) {
      const now = options.now();
      await withExtractedContext(row.trace_context ?? {}, () =>
        deadLetterDelivery(
          pool,
          { row, reason, at: new Date(now), holdUntil: new Date(now + HOLD_MS) },
          contracts.deliveryDeadLetter,
          (history) =>
            deadLetterEvent(row, reason, {
              attempts: history.attempts,
              status: history.last_status_code,
              failure: history.last_failure,
              error: history.last_error,
              firstAttemptedAt: history.first_attempted_at ?? new Date(now),
              lastAttemptedAt: history.last_attempted_at ?? new Date(now),
              now,
            }),
        ),
      );
      options.flusher.soon();
    },
  };
}

export type Leases = ReturnType<typeof createLeases>;
