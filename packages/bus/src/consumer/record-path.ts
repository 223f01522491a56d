import { inSpan, withExtractedContext } from "@th/telemetry";
import type { EachBatchPayload, KafkaMessage } from "kafkajs";
import type { BatchOutcome, Outcome } from "../outcomes.ts";
import { headersToStrings } from "../serde.ts";
import { afterRecordFailure, recordAttemptKey } from "./attempts.ts";
import type { ConsumerContext } from "./context.ts";
import type { MessageMeta } from "./subscriptions.ts";

export type RecordHandle = (
  message: KafkaMessage,
  meta: MessageMeta,
) => Promise<Outcome | BatchOutcome | undefined>;

/**
 * The per-record path: each record's handler in its own span, thrown errors retried on that
 * record, then parked; a record's offset is resolved once it is done or parked. False when the
 * partition was paused for a retry or the batch went stale, so the caller stops too.
 */
export async function eachRecord(
  ctx: ConsumerContext,
  payload: EachBatchPayload,
  messages: readonly KafkaMessage[],
  handle: RecordHandle,
): Promise<boolean> {
  const { batch, resolveOffset, heartbeat, isRunning, isStale } = payload;
  for (const message of messages) {
    if (!isRunning() || isStale()) {
      return false;
    }
    const headers = headersToStrings(message.headers);
    const attemptKey = recordAttemptKey(batch.topic, batch.partition, message.offset);
    const attempt = ctx.attempts.next(attemptKey);
    let outcome: Outcome;
    try {
      outcome = await withExtractedContext(headers, () =>
        inSpan(
          `consume ${batch.topic}`,
          { "messaging.destination": batch.topic, "messaging.kafka.offset": message.offset },
          async () =>
            (await handle(message, {
              topic: batch.topic,
              partition: batch.partition,
              headers,
              attempt,
            })) ?? { kind: "done" },
        ),
      );
    } catch (error) {
      const next = afterRecordFailure(error, attempt, ctx.maxAttempts, ctx.isUnavailable);
      if (next.kind === "outage") {
        ctx.redelivery.afterOutage(batch.topic, batch.partition, message.offset, attemptKey, error);
        return false;
      }
      if (next.kind === "retry") {
        ctx.attempts.failed(attemptKey, attempt);
        ctx.logger.warn(
          {
            err: error,
            topic: batch.topic,
            partition: batch.partition,
            offset: message.offset,
            attempt,
          },
          "handler failed; will retry",
        );
        ctx.redelivery.after(batch.topic, batch.partition, message.offset, next.afterMs);
        return false;
      }
      outcome = next;
    }
    if (outcome.kind === "retry") {
      ctx.redelivery.after(batch.topic, batch.partition, message.offset, outcome.afterMs);
      return false;
    }
    if (outcome.kind === "park") {
      await ctx.park(batch.topic, batch.partition, [{ message, headers, reason: outcome.reason }]);
    }
    ctx.attempts.settled(attemptKey);
    resolveOffset(message.offset);
    ctx.progress.advance(batch.topic, batch.partition, BigInt(message.offset) + 1n);
    await heartbeat();
  }
  return true;
}
