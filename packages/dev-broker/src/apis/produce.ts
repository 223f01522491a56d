// Produce v3-v7 (v3 is the first with record batch v2; kafkajs negotiates v7).
import { ApiKey } from "../protocol/api-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { BatchFormatError, type SplitBatch, splitProducedBatches } from "../protocol/records.ts";
import { Writer } from "../protocol/writer.ts";
import type { ApiDefinition, BrokerContext } from "./types.ts";

interface PartitionResult {
  index: number;
  errorCode: number;
  baseOffset: number;
  logStartOffset: number;
}

function producePartition(
  ctx: BrokerContext,
  topic: string,
  index: number,
  records: Buffer | null,
  now: number,
): PartitionResult {
  const log = ctx.topics.partition(topic, index);
  const fail = (errorCode: number): PartitionResult => ({
    index,
    errorCode,
    baseOffset: -1,
    logStartOffset: -1,
  });
  if (log === undefined) {
    return fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
  }
  if (records === null || records.length === 0) {
    return fail(ErrorCode.CORRUPT_MESSAGE);
  }
  let batches: SplitBatch[];
  try {
    batches = splitProducedBatches(records);
  } catch (error) {
    if (error instanceof BatchFormatError) {
      ctx.logger.warn("rejected record batch", { topic, partition: index, reason: error.message });
      return fail(
        error.kind === "unsupported-magic"
          ? ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT
          : ErrorCode.CORRUPT_MESSAGE,
      );
    }
    throw error;
  }
  // Validate every batch before appending any, so a partition's append is all or nothing.
  for (const batch of batches) {
    if (batch.bytes.length > log.config.maxMessageBytes) {
      return fail(ErrorCode.MESSAGE_TOO_LARGE);
    }
    const sequence = log.checkSequence(batch.header);
    if (sequence.kind === "duplicate") {
      return {
        index,
        errorCode: ErrorCode.NONE,
        baseOffset: sequence.baseOffset,
        logStartOffset: log.logStartOffset,
      };
    }
    if (sequence.kind === "out-of-order") {
      return fail(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER);
    }
    if (sequence.kind === "fenced") {
      return fail(ErrorCode.INVALID_PRODUCER_EPOCH);
    }
  }
  const baseOffset = log.append(batches, now);
  for (const b of batches) {
    ctx.stats.messagesAppended += b.header.lastOffsetDelta + 1;
    ctx.stats.bytesAppended += b.bytes.length;
  }
  ctx.purgatory.notifyAppend(topic, index);
  return { index, errorCode: ErrorCode.NONE, baseOffset, logStartOffset: log.logStartOffset };
}

export const produceApi: ApiDefinition = {
  apiKey: ApiKey.Produce,
  name: "Produce",
  minVersion: 3,
  maxVersion: 7,
  async handle(ctx, header, reader) {
    const transactionalId = reader.nullableString();
    const acks = reader.int16();
    reader.int32(); // timeout_ms: appends complete synchronously
    const now = Date.now();
    let appended = false;
    const topics = reader.array((r) => {
      const name = r.string();
      const partitions = r.array((p) => {
        const index = p.int32();
        const records = p.nullableBytes();
        if (transactionalId !== null) {
          return {
            index,
            errorCode: ErrorCode.INVALID_REQUEST,
            baseOffset: -1,
            logStartOffset: -1,
          };
        }
        if (acks !== 0 && acks !== 1 && acks !== -1) {
          return {
            index,
            errorCode: ErrorCode.INVALID_REQUIRED_ACKS,
            baseOffset: -1,
            logStartOffset: -1,
          };
        }
        const result = producePartition(ctx, name, index, records, now);
        appended ||= result.errorCode === ErrorCode.NONE;
        return result;
      });
      return { name, partitions };
    });
    if (acks === -1 && appended && ctx.flusher !== null) {
      await ctx.flusher.flush();
    }
    if (acks === 0) {
      return null;
    }
    const delayMs = ctx.produceAckDelayMs?.() ?? 0;
    if (delayMs > 0) {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
    const w = new Writer();
    w.array(topics, (w, t) => {
      w.string(t.name);
      w.array(t.partitions, (w, p) => {
        w.int32(p.index).int16(p.errorCode).int64(p.baseOffset).int64(-1);
        if (header.apiVersion >= 5) {
          w.int64(p.logStartOffset);
        }
      });
    });
    w.int32(0);
    return w;
  },
};
