import type { Batch, EachBatchPayload, KafkaMessage } from "kafkajs";
import type { BatchOutcome } from "../outcomes.ts";
import { headersToStrings, PoisonRecordError } from "../serde.ts";
import { afterBatchFailure, batchAttemptKey } from "./attempts.ts";
import { batchTraceOf, inBatchSpan } from "./batch-span.ts";
import type { ConsumerContext, ParkedRecord } from "./context.ts";
import type { BatchSubscription, Delivered } from "./subscriptions.ts";

interface DecodedBatch {
  /** The records that could be read, in offset order. */
  records: Delivered<unknown>[];
  /** The message and headers each of `records` came from, at the same index. */
  sources: { message: KafkaMessage; headers: Record<string, string> }[];
  /** The records that could not be read, with why. */
  toPark: ParkedRecord[];
}

/** Decodes a batch's messages; unreadable ones go to parking, any other error is thrown. */
function decodeBatch(
  subscription: BatchSubscription,
  batch: Pick<Batch, "topic" | "partition">,
  messages: readonly KafkaMessage[],
  attempt: number,
): DecodedBatch {
  const decoded: DecodedBatch = { records: [], sources: [], toPark: [] };
  for (const message of messages) {
    const headers = headersToStrings(message.headers);
    try {
      decoded.records.push(
        subscription.decode(message, {
          topic: batch.topic,
          partition: batch.partition,
          headers,
          attempt,
        }),
      );
      decoded.sources.push({ message, headers });
    } catch (error) {
      if (!(error instanceof PoisonRecordError)) {
        throw error;
      }
      decoded.toPark.push({ message, headers, reason: error.message });
    }
  }
  return decoded;
}

/**
 * The batch path (see `onBatch` for the guarantees): one handler call in one span for the whole
 * batch, retried as a whole; once its attempts are spent, `isolate` hands its records over one
 * at a time. The batch's offsets are resolved only after the handler and the parking are done.
 */
export async function eachWholeBatch(
  ctx: ConsumerContext,
  payload: EachBatchPayload,
  subscription: BatchSubscription,
  messages: readonly KafkaMessage[],
  isolate: (end: bigint) => Promise<void>,
): Promise<void> {
  const { batch, resolveOffset, heartbeat, isRunning, isStale } = payload;
  const first = messages[0];
  const last = messages[messages.length - 1];
  if (!first || !last || !isRunning() || isStale()) {
    return;
  }
  const attemptKey = batchAttemptKey(batch.topic, batch.partition, first.offset);
  const attempt = ctx.attempts.next(attemptKey);
  const { records, sources, toPark } = decodeBatch(subscription, batch, messages, attempt);
  if (records.length > 0) {
    // A long batch must not cost the group its membership.
    const beat = setInterval(() => {
      heartbeat().catch(() => {});
    }, ctx.heartbeatEveryMs);
    let outcomes: readonly (BatchOutcome | undefined)[] | undefined;
    try {
      outcomes = await inBatchSpan(
        `consume ${batch.topic}`,
        {
          "messaging.destination": batch.topic,
          "messaging.kafka.partition": batch.partition,
          "messaging.kafka.offset": first.offset,
          "messaging.batch.message_count": records.length,
        },
        batchTraceOf(sources.map((source) => source.headers)),
        async () => {
          const answer = await subscription.handleBatch(records);
          if (answer !== undefined && answer.length !== records.length) {
            throw new Error(
              `batch handler answered ${answer.length} outcomes for ${records.length} records`,
            );
          }
          return answer;
        },
      );
    } catch (error) {
      const next = afterBatchFailure(error, attempt, ctx.maxAttempts, ctx.isUnavailable);
      if (next.kind === "outage") {
        ctx.redelivery.afterOutage(batch.topic, batch.partition, first.offset, attemptKey, error);
        return;
      }
      const failure = {
        err: error,
        topic: batch.topic,
        partition: batch.partition,
        offset: first.offset,
        records: messages.length,
        attempt,
      };
      if (next.kind === "retry") {
        ctx.attempts.failed(attemptKey, attempt);
        ctx.logger.warn(failure, "batch handler failed; will retry the batch");
        ctx.redelivery.after(batch.topic, batch.partition, first.offset, next.afterMs);
        return;
      }
      ctx.attempts.forget(attemptKey);
      ctx.logger.warn(failure, "batch handler failed; handling its records one at a time");
      // Still inside the heartbeat: the records handled alone may take as long as the batch.
      await isolate(BigInt(last.offset) + 1n);
      return;
    } finally {
      clearInterval(beat);
    }
    outcomes?.forEach((outcome, index) => {
      const source = sources[index];
      if (outcome?.kind === "park" && source) {
        toPark.push({ ...source, reason: outcome.reason });
      }
    });
  }
  if (toPark.length > 0) {
    await ctx.park(batch.topic, batch.partition, toPark);
  }
  ctx.attempts.settled(attemptKey);
  resolveOffset(last.offset);
  ctx.progress.advance(batch.topic, batch.partition, BigInt(last.offset) + 1n);
  await heartbeat();
}
