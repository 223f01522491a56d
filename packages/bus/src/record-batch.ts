import { crc32c } from "@th/crc32c";

/**
 * Kafka record batches (magic 2), written straight into one growing buffer: no object per record,
 * shared headers encoded once per publish, the checksum computed eight bytes at a time. kafkajs
 * encodes each record into an encoder of its own and copies it into the batch, and its
 * per-record work was about as much CPU as building a parcel's lead.
 */

/** Bytes of a batch before its first record. */
const BATCH_HEADER_BYTES = 61;

/** Where the checksummed part of a batch begins (the attributes, after the CRC). */
const CHECKSUMMED_FROM = 21;

/** The unsigned varint of `value`'s zig-zag encoding: Kafka's varint for record fields. */
function zigzag(value: number): number {
  return ((value << 1) ^ (value >> 31)) >>> 0;
}

function varintSize(unsigned: number): number {
  let size = 1;
  let rest = unsigned;
  while (rest >= 0x80) {
    rest >>>= 7;
    size += 1;
  }
  return size;
}

function writeVarint(buffer: Buffer, at: number, unsigned: number): number {
  let pos = at;
  let rest = unsigned;
  while (rest >= 0x80) {
    buffer[pos++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  buffer[pos++] = rest;
  return pos;
}

/** A record's header section (count, then each name and value), ready to copy into records. */
export function encodeHeaders(headers: Readonly<Record<string, string>>): Buffer {
  const entries = Object.entries(headers).map(
    ([name, value]) => [Buffer.from(name), Buffer.from(value)] as const,
  );
  let size = varintSize(zigzag(entries.length));
  for (const [name, value] of entries) {
    size += varintSize(zigzag(name.length)) + name.length;
    size += varintSize(zigzag(value.length)) + value.length;
  }
  const section = Buffer.allocUnsafe(size);
  let pos = writeVarint(section, 0, zigzag(entries.length));
  for (const [name, value] of entries) {
    pos = writeVarint(section, pos, zigzag(name.length));
    pos += name.copy(section, pos);
    pos = writeVarint(section, pos, zigzag(value.length));
    pos += value.copy(section, pos);
  }
  return section;
}

/**
 * Writes one record batch: uncompressed, no producer id (a plain, non-idempotent producer, as
 * the Java client without idempotence), every record stamped with the batch's time.
 */
export class RecordBatchWriter {
  #buffer: Buffer;
  #pos = BATCH_HEADER_BYTES;
  #count = 0;
  readonly #timestamp: number;

  constructor(timestamp: number, capacity = 16 * 1024) {
    this.#timestamp = timestamp;
    this.#buffer = Buffer.allocUnsafe(Math.max(capacity, BATCH_HEADER_BYTES));
  }

  get count(): number {
    return this.#count;
  }

  /** The batch's size once finished, so far. */
  get byteLength(): number {
    return this.#pos;
  }

  /** The size `add` would grow the batch by. */
  static recordSize(keyBytes: number, valueBytes: number, headerBytes: number): number {
    const body = RecordBatchWriter.#bodySize(0x7fffffff, keyBytes, valueBytes, headerBytes);
    return varintSize(zigzag(body)) + body;
  }

  static #bodySize(
    offsetDelta: number,
    keyBytes: number,
    valueBytes: number,
    headerBytes: number,
  ): number {
    return (
      1 + // attributes
      1 + // timestamp delta: always 0
      varintSize(zigzag(offsetDelta)) +
      varintSize(zigzag(keyBytes)) +
      Math.max(keyBytes, 0) +
      varintSize(zigzag(valueBytes)) +
      Math.max(valueBytes, 0) +
      headerBytes
    );
  }

  /**
   * Appends a record. A string key is written as UTF-8; null key or value is Kafka's null.
   * `headers` is a section from `encodeHeaders`.
   */
  add(key: string | Uint8Array | null, value: Uint8Array | null, headers: Uint8Array): void {
    const keyBytes =
      key === null ? -1 : typeof key === "string" ? Buffer.byteLength(key) : key.length;
    const valueBytes = value === null ? -1 : value.length;
    const offsetDelta = this.#count;
    const body = RecordBatchWriter.#bodySize(offsetDelta, keyBytes, valueBytes, headers.length);
    this.#reserve(varintSize(zigzag(body)) + body);
    const buffer = this.#buffer;
    let pos = writeVarint(buffer, this.#pos, zigzag(body));
    buffer[pos++] = 0; // attributes
    buffer[pos++] = 0; // timestamp delta
    pos = writeVarint(buffer, pos, zigzag(offsetDelta));
    pos = writeVarint(buffer, pos, zigzag(keyBytes));
    if (typeof key === "string") {
      pos += buffer.write(key, pos, keyBytes, "utf8");
    } else if (key !== null) {
      buffer.set(key, pos);
      pos += keyBytes;
    }
    pos = writeVarint(buffer, pos, zigzag(valueBytes));
    if (value !== null) {
      buffer.set(value, pos);
      pos += valueBytes;
    }
    buffer.set(headers, pos);
    pos += headers.length;
    this.#pos = pos;
    this.#count += 1;
  }

  /** Completes the batch's header and checksum; the writer is not to be used afterwards. */
  finish(): Buffer {
    const buffer = this.#buffer;
    const high = Math.floor(this.#timestamp / 2 ** 32);
    const low = this.#timestamp >>> 0;
    buffer.fill(0, 0, 8); // base offset: the broker assigns offsets
    buffer.writeInt32BE(this.#pos - 12, 8); // batch length, after itself
    buffer.writeInt32BE(-1, 12); // partition leader epoch: not known to producers
    buffer.writeInt8(2, 16); // magic
    buffer.writeInt16BE(0, CHECKSUMMED_FROM); // attributes: no compression, create time
    buffer.writeInt32BE(this.#count - 1, 23); // last offset delta
    buffer.writeInt32BE(high, 27); // first timestamp
    buffer.writeUInt32BE(low, 31);
    buffer.writeInt32BE(high, 35); // max timestamp
    buffer.writeUInt32BE(low, 39);
    buffer.fill(0xff, 43, 57); // producer id -1, producer epoch -1, base sequence -1
    buffer.writeInt32BE(this.#count, 57);
    buffer.writeUInt32BE(crc32c(buffer, CHECKSUMMED_FROM, this.#pos), 17);
    return buffer.subarray(0, this.#pos);
  }

  #reserve(bytes: number) {
    const needed = this.#pos + bytes;
    if (needed > this.#buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(needed, this.#buffer.length * 2));
      this.#buffer.copy(grown, 0, 0, this.#pos);
      this.#buffer = grown;
    }
  }
}

/**
 * The batches of one publish, per partition. A partition's records go into one batch until it
 * would pass `maxBatchBytes` (Kafka's default `message.max.bytes` is about 1 MB), then into the
 * next, which is sent after it.
 */
export class PartitionBatches {
  readonly #timestamp: number;
  readonly #maxBatchBytes: number;
  readonly #expectedPerPartition: number;
  readonly #open = new Map<number, RecordBatchWriter>();
  readonly #done = new Map<number, Buffer[]>();

  constructor(options: {
    timestamp: number;
    expectedRecords: number;
    partitions: number;
    maxBatchBytes?: number;
  }) {
    this.#timestamp = options.timestamp;
    this.#maxBatchBytes = options.maxBatchBytes ?? 1_000_000;
    this.#expectedPerPartition = Math.ceil(
      (options.expectedRecords / Math.max(1, options.partitions)) * 1.25,
    );
  }

  add(
    partition: number,
    key: string | Uint8Array | null,
    value: Uint8Array | null,
    headers: Uint8Array,
  ): void {
    const keyBytes = key === null ? 0 : typeof key === "string" ? key.length * 3 : key.length;
    const size = RecordBatchWriter.recordSize(keyBytes, value?.length ?? 0, headers.length);
    let writer = this.#open.get(partition);
    if (writer && writer.count > 0 && writer.byteLength + size > this.#maxBatchBytes) {
      this.#close(partition, writer);
      writer = undefined;
    }
    if (!writer) {
      // Sized for this partition's share of the publish, so it rarely has to grow.
      const capacity = Math.min(
        this.#maxBatchBytes,
        BATCH_HEADER_BYTES + size * this.#expectedPerPartition,
      );
      writer = new RecordBatchWriter(this.#timestamp, capacity);
      this.#open.set(partition, writer);
    }
    writer.add(key, value, headers);
  }

  /** Every partition's batches, in the order they are to be sent. */
  finish(): Map<number, Buffer[]> {
    for (const [partition, writer] of this.#open) {
      this.#close(partition, writer);
    }
    this.#open.clear();
    return this.#done;
  }

  #close(partition: number, writer: RecordBatchWriter) {
    const list = this.#done.get(partition) ?? [];
    list.push(writer.finish());
    this.#done.set(partition, list);
  }
}
