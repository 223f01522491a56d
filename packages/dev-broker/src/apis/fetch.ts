// Fetch v4-v11 with long-polling. Fetch sessions (v7+) are not kept: every request is a full fetch
// and the response carries session_id 0, which clients treat as "sessions unsupported".
import type { ParkedFetch } from "../fetch-purgatory.ts";
import { fetchKey } from "../fetch-purgatory.ts";
import { ApiKey } from "../protocol/api-keys.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { Writer } from "../protocol/writer.ts";
import type { ApiDefinition, BrokerContext } from "./types.ts";

interface FetchPartitionRequest {
  partition: number;
  fetchOffset: number;
  partitionMaxBytes: number;
}

interface FetchTopicRequest {
  topic: string;
  partitions: FetchPartitionRequest[];
}

interface FetchPartitionResult {
  partition: number;
  errorCode: number;
  highWatermark: number;
  logStartOffset: number;
  records: Buffer | null;
}

interface FetchOutcome {
  topics: Array<{ topic: string; partitions: FetchPartitionResult[] }>;
  bytes: number;
  hasError: boolean;
}

function collect(ctx: BrokerContext, topics: FetchTopicRequest[], maxBytes: number): FetchOutcome {
  let bytes = 0;
  let hasError = false;
  const out = topics.map(({ topic, partitions }) => ({
    topic,
    partitions: partitions.map((p): FetchPartitionResult => {
      const log = ctx.topics.partition(topic, p.partition);
      if (log === undefined) {
        hasError = true;
        return {
          partition: p.partition,
          errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
          highWatermark: -1,
          logStartOffset: -1,
          records: null,
        };
      }
      const highWatermark = log.logEndOffset;
      const logStartOffset = log.logStartOffset;
      if (p.fetchOffset > highWatermark || p.fetchOffset < logStartOffset) {
        hasError = true;
        return {
          partition: p.partition,
          errorCode: ErrorCode.OFFSET_OUT_OF_RANGE,
          highWatermark,
          logStartOffset,
          records: null,
        };
      }
      const budget = Math.min(p.partitionMaxBytes, maxBytes - bytes);
      // KIP-74: the first partition with data always returns at least one whole batch.
      const records = log.read(p.fetchOffset, Math.max(0, budget), bytes === 0);
      bytes += records?.length ?? 0;
      return {
        partition: p.partition,
        errorCode: ErrorCode.NONE,
        highWatermark,
        logStartOffset,
        records,
      };
    }),
  }));
  return { topics: out, bytes, hasError };
}

function encode(version: number, outcome: FetchOutcome): Writer {
  const w = new Writer(1024);
  w.int32(0); // throttle_time_ms
  if (version >= 7) {
    w.int16(ErrorCode.NONE).int32(0); // error_code, session_id
  }
  w.array(outcome.topics, (w, t) => {
    w.string(t.topic);
    w.array(t.partitions, (w, p) => {
      w.int32(p.partition).int16(p.errorCode).int64(p.highWatermark).int64(p.highWatermark);
      if (version >= 5) {
        w.int64(p.logStartOffset);
      }
      w.int32(-1); // aborted_transactions: null
      if (version >= 11) {
        w.int32(-1); // preferred_read_replica
      }
      w.nullableBytes(p.records ?? Buffer.alloc(0));
    });
  });
  return w;
}

export const fetchApi: ApiDefinition = {
  apiKey: ApiKey.Fetch,
  name: "Fetch",
  minVersion: 4,
  maxVersion: 11,
  handle(ctx, header, reader, connection) {
    const version = header.apiVersion;
    reader.int32(); // replica_id
    const maxWaitMs = reader.int32();
    const minBytes = reader.int32();
    const maxBytes = reader.int32();
    reader.int8(); // isolation_level: no transactions, so LSO == HW
    if (version >= 7) {
      reader.int32(); // session_id
      reader.int32(); // session_epoch
    }
    const topics = reader.array(
      (r): FetchTopicRequest => ({
        topic: r.string(),
        partitions: r.array((p): FetchPartitionRequest => {
          const partition = p.int32();
          if (version >= 9) {
            p.int32(); // current_leader_epoch
          }
          const fetchOffset = p.int64Number();
          if (version >= 5) {
            p.int64(); // log_start_offset (followers only)
          }
          return { partition, fetchOffset, partitionMaxBytes: p.int32() };
        }),
      }),
    );
    // forgotten_topics_data and rack_id only matter with fetch sessions / rack-aware replicas.

    const first = collect(ctx, topics, maxBytes);
    if (first.hasError || first.bytes >= minBytes || maxWaitMs <= 0 || connection.closed) {
      return encode(version, first);
    }
    return new Promise<Writer | null>((resolve) => {
      let done = false;
      let timer: NodeJS.Timeout | null = null;
      let unregisterClose: () => void = () => {};
      const finish = (outcome: FetchOutcome | null): void => {
        if (done) {
          return;
        }
        done = true;
        if (timer !== null) {
          clearTimeout(timer);
        }
        unregisterClose();
        ctx.purgatory.remove(parked);
        resolve(outcome === null ? null : encode(version, outcome));
      };
      const parked: ParkedFetch = {
        clientId: header.clientId,
        partitionKeys: topics.flatMap((t) =>
          t.partitions.map((p) => fetchKey(t.topic, p.partition)),
        ),
        onAppend: () => {
          const outcome = collect(ctx, topics, maxBytes);
          if (outcome.hasError || outcome.bytes >= minBytes) {
            finish(outcome);
            return true;
          }
          return false;
        },
        complete: () => finish(collect(ctx, topics, maxBytes)),
      };
      ctx.purgatory.park(parked);
      timer = setTimeout(() => finish(collect(ctx, topics, maxBytes)), maxWaitMs);
      unregisterClose = connection.onClose(() => finish(null));
    });
  },
};
