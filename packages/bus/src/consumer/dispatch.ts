import type { EachBatchPayload, KafkaMessage } from "kafkajs";
import type { BatchOutcome } from "../outcomes.ts";
import { eachWholeBatch } from "./batch-path.ts";
import type { ConsumerContext } from "./context.ts";
import { splitAtIsolation } from "./isolation.ts";
import { eachRecord } from "./record-path.ts";
import type { BatchSubscription, MessageMeta, Subscription } from "./subscriptions.ts";

/** A record of a batch subscription handed over alone (while isolating a failed batch). */
function alone(subscription: BatchSubscription) {
  return async (message: KafkaMessage, meta: MessageMeta): Promise<BatchOutcome | undefined> => {
    const outcomes = await subscription.handleBatch([subscription.decode(message, meta)]);
    if (outcomes !== undefined && outcomes.length !== 1) {
      throw new Error(`batch handler answered ${outcomes.length} outcomes for 1 record`);
    }
    return outcomes?.[0];
  };
}

/**
 * kafkajs's `eachBatch` for a set of subscriptions: each fetched batch goes to the record path
 * (`on`) or the batch path (`onBatch`), and the records of a batch that kept failing go one at
 * a time until the end of that batch.
 */
export function dispatchBatches(
  ctx: ConsumerContext,
  subscriptions: ReadonlyMap<string, Subscription>,
): (payload: EachBatchPayload) => Promise<void> {
  /** Per `topic/partition`: the end of a failed batch whose records go one at a time. */
  const isolating = new Map<string, bigint>();

  const eachBatchOf = async (
    payload: EachBatchPayload,
    subscription: BatchSubscription,
    messages: readonly KafkaMessage[],
  ): Promise<void> => {
    const partitionKey = `${payload.batch.topic}/${payload.batch.partition}`;
    // A batch whose attempts are spent comes back here, to go one record at a time.
    const asWhole = (whole: readonly KafkaMessage[]) =>
      eachWholeBatch(ctx, payload, subscription, whole, (end) => {
        isolating.set(partitionKey, end);
        return eachBatchOf(payload, subscription, whole);
      });
    const isolateBelow = isolating.get(partitionKey);
    if (isolateBelow === undefined) {
      await asWhole(messages);
      return;
    }
    const { lone, rest, ends } = splitAtIsolation(messages, isolateBelow);
    if (!(await eachRecord(ctx, payload, lone, alone(subscription)))) {
      return;
    }
    if (ends) {
      isolating.delete(partitionKey);
    }
    if (rest !== undefined) {
      await asWhole(rest);
    }
  };

  return async (payload) => {
    const { batch } = payload;
    const subscription = subscriptions.get(batch.topic);
    if (!subscription || batch.messages.length === 0) {
      return;
    }
    if ("handleBatch" in subscription) {
      await eachBatchOf(payload, subscription, batch.messages);
    } else {
      await eachRecord(ctx, payload, batch.messages, subscription.handle);
    }
  };
}
