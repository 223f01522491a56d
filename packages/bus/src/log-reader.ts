import kafkajs from "kafkajs";
import { Connection, type ConnectionSecurity, Reader } from "./wire.ts";

// kafkajs is CommonJS; its codec registry is read through the default export.
const { CompressionCodecs } = kafkajs;

/**
 * A lean, group-less reader of partition logs for replays. kafkajs turns every record into an
 * object with string offsets computed through Long arithmetic, a key Buffer and a headers object;
 * at a few hundred thousand records a second that allocation, not the broker, is the limit. This
 * reader speaks just Fetch v4 (supported from Kafka 0.11 through 4.x), walks record batches in
 * place and hands out each record's value and the one header the caller asks for.
 */

export const FETCH = 1;
export const FETCH_VERSION = 4;

export interface LogRecord {
  partition: number;
  /** Offset as a decimal string, as kafkajs reports it. */
  offset: string;
  value: Buffer | null;
  /** The value of the requested header (the last one when repeated), or undefined. */
  header: string | undefined;
}

export interface LogReaderOptions {
  clientId: string;
  host: string;
  port: number;
  /** TLS and SASL, as every other connection of the process uses them. */
  security?: ConnectionSecurity;
  topic: string;
  /** partition → [first offset to read, offset to stop before]. */
  ranges: ReadonlyMap<number, readonly [bigint, bigint]>;
  /** Name of the header to extract per record. */
  header: string;
  /** Bytes per partition per fetch. */
  maxBytesPerPartition?: number;
  maxBytes?: number;
}

/** A Fetch v4 request body; the broker answers once any record is there or `maxWaitMs` passed. */
export function fetchRequest(
  topic: string,
  partitions: readonly { partition: number; offset: bigint }[],
  maxBytes: number,
  maxBytesPerPartition: number,
  maxWaitMs = 50,
): Buffer {
  const name = Buffer.from(topic);
  const body = Buffer.alloc(17 + 4 + 2 + name.length + 4 + partitions.length * 16);
  let pos = body.writeInt32BE(-1, 0); // replica id: a consumer
  pos = body.writeInt32BE(maxWaitMs, pos); // max wait ms
  pos = body.writeInt32BE(1, pos); // min bytes
  pos = body.writeInt32BE(maxBytes, pos);
  pos = body.writeInt8(0, pos); // read uncommitted
  pos = body.writeInt32BE(1, pos);
  pos = body.writeInt16BE(name.length, pos);
  pos += name.copy(body, pos);
  pos = body.writeInt32BE(partitions.length, pos);
  for (const { partition, offset } of partitions) {
    pos = body.writeInt32BE(partition, pos);
    pos = body.writeBigInt64BE(offset, pos);
    pos = body.writeInt32BE(maxBytesPerPartition, pos);
  }
  return body;
}

/** Every record of a topic carries the same few header values; decode each once. */
class HeaderValues {
  #bytes: Buffer = Buffer.alloc(0);
  #text = "";

  text(buffer: Buffer, start: number, length: number): string {
    if (
      length !== this.#bytes.length ||
      buffer.compare(this.#bytes, 0, length, start, start + length) !== 0
    ) {
      this.#bytes = Buffer.from(buffer.subarray(start, start + length));
      this.#text = this.#bytes.toString("utf8");
    }
    return this.#text;
  }
}

/**
 * Walks the record batches of one partition's record set, appending records below `end` to
 * `out`; returns the offset to fetch next (unchanged when the set held no whole batch).
 */
async function readRecordSet(
  records: Buffer,
  partition: number,
  from: bigint,
  end: bigint,
  headerName: Buffer,
  seen: HeaderValues,
  out: LogRecord[],
): Promise<bigint> {
  let next = from;
  let pos = 0;
  while (pos + 12 <= records.length) {
    const baseOffset = records.readBigInt64BE(pos);
    const batchLength = records.readInt32BE(pos + 8);
    const batchEnd = pos + 12 + batchLength;
    if (batchEnd > records.length) {
      break; // a partial batch at the end of the fetch; the next fetch starts at it
    }
    const magic = records.readInt8(pos + 16);
    if (magic !== 2) {
      throw new Error(`record batch magic ${magic} at offset ${baseOffset} is not supported`);
    }
    const attributes = records.readInt16BE(pos + 21);
    const lastOffsetDelta = records.readInt32BE(pos + 23);
    const count = records.readInt32BE(pos + 57);
    const batchNext = baseOffset + BigInt(lastOffsetDelta) + 1n;
    const isControl = (attributes & 0x20) !== 0;
    if (!isControl && batchNext > next) {
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
      // Offsets fit a double exactly; strings are made once per record.
      const base = Number(baseOffset);
      const stop = Number(end);
      const first = Number(next);
      for (let index = 0; index < count; index++) {
        const length = reader.varint();
        const recordEnd = reader.pos + length;
        reader.pos += 1; // attributes
        reader.skipVarint(); // timestamp delta
        const offset = base + reader.varint();
        const keyLength = reader.varint();
        if (keyLength > 0) {
          reader.pos += keyLength;
        }
        const valueLength = reader.varint();
        let value: Buffer | null = null;
        if (valueLength >= 0) {
          value = reader.buffer.subarray(reader.pos, reader.pos + valueLength);
          reader.pos += valueLength;
        }
        const headerCount = reader.varint();
        let header: string | undefined;
        for (let h = 0; h < headerCount; h++) {
          const nameLength = reader.varint();
          const nameStart = reader.pos;
          reader.pos += nameLength;
          const valueLength = reader.varint();
          if (
            nameLength === headerName.length &&
            reader.buffer.compare(headerName, 0, nameLength, nameStart, nameStart + nameLength) ===
              0
          ) {
            header =
              valueLength < 0 ? undefined : seen.text(reader.buffer, reader.pos, valueLength);
          }
          if (valueLength > 0) {
            reader.pos += valueLength;
          }
        }
        reader.pos = recordEnd;
        if (offset >= stop) {
          break;
        }
        if (offset >= first) {
          out.push({ partition, offset: String(offset), value, header });
        }
      }
    }
    if (batchNext > next) {
      next = batchNext;
    }
    pos = batchEnd;
  }
  return next;
}

/** One partition of a Fetch v4 answer: its high-water mark and its record set, if any. */
interface FetchedPartition {
  partition: number;
  highWatermark: bigint;
  records: Buffer | undefined;
}

/**
 * The partitions of a Fetch v4 answer, in the answer's order; throws at the first partition the
 * broker answered with an error.
 */
export function* fetchedPartitions(topic: string, body: Buffer): Generator<FetchedPartition> {
  const reader = new Reader(body);
  reader.int32(); // throttle time
  const topics = reader.int32();
  for (let t = 0; t < topics; t++) {
    reader.string();
    const partitions = reader.int32();
    for (let p = 0; p < partitions; p++) {
      const partition = reader.int32();
      const errorCode = reader.int16();
      const highWatermark = reader.int64();
      reader.int64(); // last stable offset
      const aborted = reader.int32();
      if (aborted > 0) {
        reader.pos += aborted * 16;
      }
      const size = reader.int32();
      const records = size > 0 ? body.subarray(reader.pos, reader.pos + size) : undefined;
      reader.pos += Math.max(0, size);
      if (errorCode !== 0) {
        throw new Error(`fetch of ${topic}/${partition} failed with error ${errorCode}`);
      }
      yield { partition, highWatermark, records };
    }
  }
}

/**
 * Reads each partition of `ranges` from its first offset up to (not including) its end, calling
 * `onRecords` with every fetched slice in log order per partition. The next fetch is on the wire
 * while `onRecords` runs. One connection to the broker given; every partition must be led by it.
 */
export async function readLog(
  options: LogReaderOptions,
  onRecords: (records: LogRecord[]) => Promise<void>,
): Promise<number> {
  const headerName = Buffer.from(options.header);
  const seen = new HeaderValues();
  const maxBytesPerPartition = options.maxBytesPerPartition ?? 1024 * 1024;
  const maxBytes = options.maxBytes ?? 16 * 1024 * 1024;
  const position = new Map<number, bigint>();
  for (const [partition, [from, end]] of options.ranges) {
    if (from < end) {
      position.set(partition, from);
    }
  }
  let total = 0;
  const connection = await Connection.open(
    options.host,
    options.port,
    options.clientId,
    options.security,
  );
  try {
    const send = () =>
      connection.request(FETCH, FETCH_VERSION, [
        fetchRequest(
          options.topic,
          [...position].map(([partition, offset]) => ({ partition, offset })),
          maxBytes,
          maxBytesPerPartition,
        ),
      ]);
    const start = () => {
      const request = send();
      // A failure while the previous slice is delivered surfaces at the next await of it.
      request.catch(() => {});
      return request;
    };
    let inflight = position.size > 0 ? start() : undefined;
    let delivering: Promise<void> = Promise.resolve();
    while (inflight) {
      const body = await inflight;
      const out: LogRecord[] = [];
      for (const { partition, highWatermark, records } of fetchedPartitions(options.topic, body)) {
        const from = position.get(partition);
        const end = options.ranges.get(partition)?.[1];
        if (from === undefined || end === undefined) {
          continue;
        }
        if (records === undefined) {
          if (from >= highWatermark) {
            position.delete(partition);
          }
          continue;
        }
        const next = await readRecordSet(records, partition, from, end, headerName, seen, out);
        // The log can end short of `end` (records deleted since): stop there, never spin.
        if (next >= end || next >= highWatermark) {
          position.delete(partition);
        } else {
          position.set(partition, next);
        }
      }
      inflight = position.size > 0 ? start() : undefined;
      await delivering;
      total += out.length;
      delivering = out.length > 0 ? onRecords(out) : Promise.resolve();
      // Surface a failure at the next await, not as an unhandled rejection.
      delivering.catch(() => {});
    }
    await delivering;
    return total;
  } finally {
    connection.close();
  }
}
