import { SCHEMA_HEADER, type TopicContract } from "@th/contracts";
import type { Admin } from "kafkajs";
import { readLog } from "./log-reader.ts";
import { decodeValue, PoisonRecordError } from "./serde.ts";
import type { ConnectionSecurity } from "./wire.ts";

export interface ReplayOptions<T> {
  /**
   * Called with each fetched slice of the log: records of one or more partitions, each
   * partition's in offset order; the next slice waits for this call.
   */
  onBatch(records: readonly ReplayedRecord<T>[]): Promise<void>;
}

export interface ReplayedRecord<T> {
  value: T;
  partition: number;
  offset: string;
}

export interface ReplayResult {
  records: number;
  /** The high-water marks the replay read up to, taken when it began. */
  highWaterMarks: ReadonlyMap<number, string>;
  /**
   * Where each partition's log began when the replay began: retention may have removed what
   * lies below, so the replay says nothing about those offsets.
   */
  lowWaterMarks: ReadonlyMap<number, string>;
}

/** Reads a topic up to where it ended when the replay began, for `Bus.replay` (see there). */
export async function replayTopic<T>(
  admin: Admin,
  connection: { clientId: string; security: ConnectionSecurity },
  contract: TopicContract<T>,
  options: ReplayOptions<T>,
): Promise<ReplayResult> {
  const offsets = await admin.fetchTopicOffsets(contract.topic);
  const highWaterMarks = new Map(offsets.map((item) => [item.partition, item.high]));
  const lowWaterMarks = new Map(
    offsets.map((item) => [item.partition, BigInt(item.low) < 0n ? "0" : item.low]),
  );
  const ranges = new Map<number, readonly [bigint, bigint]>();
  for (const item of offsets) {
    const [low, high] = [BigInt(item.low), BigInt(item.high)];
    if (high > low) {
      ranges.set(item.partition, [low < 0n ? 0n : low, high]);
    }
  }
  if (ranges.size === 0) {
    return { records: 0, highWaterMarks, lowWaterMarks };
  }
  // One reader per partition leader, all at once; each hands over what it fetched while its
  // next fetch is on the wire.
  const [metadata, cluster] = await Promise.all([
    admin.fetchTopicMetadata({ topics: [contract.topic] }),
    admin.describeCluster(),
  ]);
  const leaders = new Map<number, Map<number, readonly [bigint, bigint]>>();
  for (const partition of metadata.topics[0]?.partitions ?? []) {
    const range = ranges.get(partition.partitionId);
    if (range) {
      const led = leaders.get(partition.leader) ?? new Map();
      led.set(partition.partitionId, range);
      leaders.set(partition.leader, led);
    }
  }
  let records = 0;
  let failed = false;
  const schemaHeaderOf = new Map<string | undefined, Record<string, string>>();
  await Promise.all(
    [...leaders].map(async ([nodeId, led]) => {
      const broker = cluster.brokers.find((item) => item.nodeId === nodeId);
      if (!broker) {
        throw new Error(`no address for broker ${nodeId} leading ${contract.topic}`);
      }
      await readLog(
        {
          clientId: connection.clientId,
          host: broker.host,
          port: broker.port,
          security: connection.security,
          topic: contract.topic,
          ranges: led,
          header: SCHEMA_HEADER,
        },
        async (slice) => {
          if (failed) {
            return;
          }
          const decoded: ReplayedRecord<T>[] = [];
          for (const record of slice) {
            let headers = schemaHeaderOf.get(record.header);
            if (!headers) {
              headers = record.header === undefined ? {} : { [SCHEMA_HEADER]: record.header };
              schemaHeaderOf.set(record.header, headers);
            }
            try {
              decoded.push({
                value: decodeValue(contract, record.value, headers),
                partition: record.partition,
                offset: record.offset,
              });
            } catch (error) {
              if (!(error instanceof PoisonRecordError)) {
                throw error;
              }
            }
          }
          if (decoded.length > 0) {
            try {
              await options.onBatch(decoded);
            } catch (error) {
              failed = true;
              throw error;
            }
            records += decoded.length;
          }
        },
      );
    }),
  );
  return { records, highWaterMarks, lowWaterMarks };
}
