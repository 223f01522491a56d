import type { Logger } from "@th/telemetry";
import type { ClaimedRow } from "../db/deliveries.ts";
import { outcomeOf } from "../domain/outcome.ts";
import { HOLD_MS } from "../domain/schedule.ts";
import type { Sent } from "./attempt.ts";
import type { WebhookViews } from "./lead-views.ts";
import type { AttemptRecorder } from "./recorder.ts";
import type { OutboxFlusher } from "./scheduler.ts";

/**
 * Records what an attempt came to: its outcome (`outcomeOf`) is written under the row's lease,
 * with a delivered attempt's lead-view; the view the attempt carried is then kept or given back.
 */
export function createOutcomeWriter(options: {
  recorder: AttemptRecorder;
  views: WebhookViews;
  logger: Logger;
  now: () => number;
  longDelayScale: number;
  flusher: OutboxFlusher;
  /** Claims again at an exhausted delivery's dead-letter time. */
  wakeAt: (at: number) => void;
  /** After each recorded attempt: its outcome, number and how long the receiver took. */
  onAttempt?: ((outcome: string, attempt: number, durationMs: number) => void) | undefined;
}) {
  /** Writes an attempt's outcome under the row's lease; settles the lead-view it carried. */
  async function record(row: ClaimedRow, { attemptNo, startedAt, result, trace }: Sent) {
    const at = options.now();
    const outcome = outcomeOf({
      delivery: row,
      attempt: attemptNo,
      attemptedAt: startedAt,
      result,
      now: at,
      longDelayScale: options.longDelayScale,
      trace,
      view: options.views.viewOf(row, new Date(at)),
    });
    const { state, dueAt } = outcome;
    let committed: boolean;
    try {
      committed = await options.recorder.record({
        id: row.id,
        leaseToken: row.lease_token,
        replayNo: row.replay_no,
        attempt: attemptNo,
        attemptedAt: startedAt,
        durationMs: result.durationMs,
        statusCode: outcome.statusCode,
        failure: outcome.failure,
        error: outcome.error,
        state,
        dueAt,
        deadLetterReason: outcome.deadLetterReason,
        recordedAt: new Date(at),
        holdUntil: new Date(at + HOLD_MS),
        charge: state === "complete" && options.views.carries(row),
        events: outcome.events,
      });
    } catch (error) {
      // Whether a delivered attempt's record committed is unknown: its view is kept reserved,
      // and a redelivery (same webhook id) finds it unsettled and records it.
      options.views.settle(row, state === "complete");
      throw error;
    }
    options.views.settle(row, committed && state === "complete");
    if (committed) {
      options.onAttempt?.(state, attemptNo, result.durationMs);
      options.flusher.shortly();
      if (state === "exhausted" && dueAt) {
        options.wakeAt(dueAt.getTime());
      }
    } else {
      options.logger.warn({ delivery_id: row.id }, "lease lost before the attempt was recorded");
    }
  }

  return { record };
}
