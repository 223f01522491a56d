import { setTimeout as sleep } from "node:timers/promises";
import kafkajs, { type Admin } from "kafkajs";
import { FETCH, FETCH_VERSION, fetchedPartitions, fetchRequest } from "./log-reader.ts";
import { Connection, type ConnectionSecurity, Reader } from "./wire.ts";

// kafkajs is CommonJS; its codec registry is read through the default export.
const { CompressionCodecs } = kafkajs;

/**
 * What a tail of a topic's keys reports. Calls are synchronous and in log order per partition.
 */
export interface KeyTailHandlers {
  /** The keys of records appended since the last call. */
  onKeys(keys: readonly string[]): void;
  /**
   * Every partition has been read to its end as of `at` (ms since the epoch): no record appended
   * before `at` is still unread. Called after each fetch that leaves every partition at its end.
   */
  onCaughtUp(at: number): void;
  /**
   * The tail (re)starts at the end of the log, so records appended while it was down are never
   * reported: whatever was kept on the strength of earlier keys must go. Called before it reads.
   */
  onRestart(): void;
  /** A failure; the tail starts over after a pause. */
  onError?(error: unknown): void;
}

export interface KeyTail {
  /** Resolves once the tail has taken its first positions and is reading. */
  readonly ready: Promise<void>;
  stop(): Promise<void>;
}

export interface KeyTailOptions {
  /** How long the broker holds a fetch that finds nothing new (also how often `onCaughtUp` can come). */
  maxWaitMs?: number;
  /** The pause before starting over after a failure. */
  retryMs?: number;
}

/**
 * Follows a topic from its end, group-less, reading only record keys: for a process that keeps
 * something derived from what the keys name (a cache) and must hear of every change, on every
 * instance. Speaks Fetch v4 to each partition's leader, as the replay's log reader does, and
 * starts over from the end after any failure (telling the handler so).
 */
export function tailKeys(
  deps: { admin: () => Promise<Admin>; clientId: string; security: ConnectionSecurity },
  topic: string,
  handlers: KeyTailHandlers,
  options: KeyTailOptions = {},
): KeyTail {
  const maxWaitMs = options.maxWaitMs ?? 500;
  const retryMs = options.retryMs ?? 1_000;
  let stopped = false;
  let connections: Connection[] = [];
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });

  async function readFromEnd(): Promise<void> {
    handlers.onRestart();
    const admin = await deps.admin();
    const [offsets, metadata, cluster] = await Promise.all([
      admin.fetchTopicOffsets(topic),
      admin.fetchTopicMetadata({ topics: [topic] }),
      admin.describeCluster(),
    ]);
    const position = new Map(offsets.map((item) => [item.partition, BigInt(item.high)]));
    const byLeader = new Map<number, number[]>();
    for (const partition of metadata.topics[0]?.partitions ?? []) {
      const led = byLeader.get(partition.leader) ?? [];
      led.push(partition.partitionId);
      byLeader.set(partition.leader, led);
    }
    const caughtUpAt = new Map<number, number>();
    const opened = await Promise.all(
      [...byLeader].map(async ([nodeId, partitions]) => {
        const broker = cluster.brokers.find((item) => item.nodeId === nodeId);
        if (!broker) {
          throw new Error(`no address for broker ${nodeId} leading ${topic}`);
        }
        const connection = await Connection.open(
          broker.host,
          broker.port,
          deps.clientId,
          deps.security,
        );
        return { connection, partitions };
      }),
    );
    connections = opened.map((item) => item.connection);
    if (stopped) {
      throw new Error("stopped");
    }
    markReady();
    const report = () => {
      let oldest = Number.POSITIVE_INFINITY;
      for (const partition of position.keys()) {
        oldest = Math.min(oldest, caughtUpAt.get(partition) ?? 0);
      }
      if (oldest > 0 && oldest !== Number.POSITIVE_INFINITY) {
        handlers.onCaughtUp(oldest);
      }
    };
    await Promise.all(
      opened.map(async ({ connection, partitions }) => {
        while (!stopped) {
          const sentAt = Date.now();
          const body = await connection.request(FETCH, FETCH_VERSION, [
            fetchRequest(
              topic,
              partitions.map((partition) => ({
                partition,
                offset: position.get(partition) ?? 0n,
              })),
              8 * 1024 * 1024,
              1024 * 1024,
              maxWaitMs,
            ),
          ]);
          const keys = await readKeys(topic, body, position, (partition) =>
            caughtUpAt.set(partition, sentAt),
          );
          if (keys.length > 0) {
            handlers.onKeys(keys);
          }
          report();
        }
      }),
    );
  }

  const running = (async () => {
    while (!stopped) {
      try {
        await readFromEnd();
      } catch (error) {
        if (stopped) {
          break;
        }
        handlers.onError?.(error);
        for (const connection of connections) {
          connection.close();
        }
        await sleep(retryMs);
      }
    }
  })();

  return {
    ready,
    async stop() {
      stopped = true;
      for (const connection of connections) {
        connection.close();
      }
      await running;
    },
  };
}

/**
 * The keys of a Fetch v4 answer's records at or past each partition's position; moves the
 * positions on and calls `atEnd` for each partition left at its high-water mark.
 */
async function readKeys(
  topic: string,
  body: Buffer,
  position: Map<number, bigint>,
  atEnd: (partition: number) => void,
): Promise<string[]> {
  const keys: string[] = [];
  for (const { partition, highWatermark, records } of fetchedPartitions(topic, body)) {
    let next = position.get(partition) ?? 0n;
    if (records) {
      next = await keysOfRecordSet(records, next, keys);
      position.set(partition, next);
    }
    if (next >= highWatermark) {
      atEnd(partition);
    }
  }
  return keys;
}

/** Appends the keys of the record set's records at or past `from`; answers the next offset. */
async function keysOfRecordSet(records: Buffer, from: bigint, keys: string[]): Promise<bigint> {
  let next = from;
  let pos = 0;
  while (pos + 12 <= records.length) {
    const baseOffset = records.readBigInt64BE(pos);
    const batchLength = records.readInt32BE(pos + 8);
    const batchEnd = pos + 12 + batchLength;
    if (batchEnd > records.length) {
      break; // a partial batch at the end of the fetch; the next fetch starts at it
    }
    const attributes = records.readInt16BE(pos + 21);
    const lastOffsetDelta = records.readInt32BE(pos + 23);
    const count = records.readInt32BE(pos + 57);
    const batchNext = baseOffset + BigInt(lastOffsetDelta) + 1n;
    if ((attributes & 0x20) === 0 && batchNext > next) {
      const codec = attributes & 0x07;
      let reader: Reader;
      if (codec === 0) {
        reader = new Reader(records.subarray(0, batchEnd), pos + 61);
      } else {
        const create = CompressionCodecs[codec as keyof typeof CompressionCodecs];
        if (!create) {
          throw new Error(`record batch compression ${codec} has no registered codec`);
        }
        reader = new Reader(await create().decompress(records.subarray(pos + 61, batchEnd)));
      }
      const first = Number(next - baseOffset);
      for (let index = 0; index < count; index++) {
        const length = reader.varint();
        const recordEnd = reader.pos + length;
        reader.pos += 1; // attributes
        reader.skipVarint(); // timestamp delta
        const offsetDelta = reader.varint();
        const keyLength = reader.varint();
        if (keyLength >= 0 && offsetDelta >= first) {
          keys.push(reader.buffer.toString("utf8", reader.pos, reader.pos + keyLength));
        }
        reader.pos = recordEnd;
      }
    }
    if (batchNext > next) {
      next = batchNext;
    }
    pos = batchEnd;
  }
  return next;
}
