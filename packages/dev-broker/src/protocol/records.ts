// Record batch v2 (magic 2) handling. The broker stores producer batches byte-for-byte and only
// stamps baseOffset and partitionLeaderEpoch, both outside the CRC, so nothing is ever re-encoded.
import { gunzipSync } from "node:zlib";
import { crc32c } from "@th/crc32c";
import { decodeVarint, decodeVarlong } from "./varint.ts";

export const BATCH_HEADER_BYTES = 61;
const LOG_OVERHEAD = 12;
const MAGIC_OFFSET = 16;
const CRC_OFFSET = 17;
const ATTRIBUTES_OFFSET = 21;

export interface BatchHeader {
  baseOffset: number;
  /** Total bytes of the batch including the 12-byte offset/length prefix. */
  sizeBytes: number;
  magic: number;
  crc: number;
  attributes: number;
  lastOffsetDelta: number;
  baseTimestamp: number;
  maxTimestamp: number;
  producerId: number;
  producerEpoch: number;
  baseSequence: number;
  recordCount: number;
}

export class BatchFormatError extends Error {
  readonly kind: "corrupt" | "unsupported-magic";
  constructor(kind: "corrupt" | "unsupported-magic", message: string) {
    super(message);
    this.kind = kind;
  }
}

export function readBatchHeader(buf: Buffer, offset = 0): BatchHeader {
  return {
    baseOffset: Number(buf.readBigInt64BE(offset)),
    sizeBytes: buf.readInt32BE(offset + 8) + LOG_OVERHEAD,
    magic: buf.readInt8(offset + MAGIC_OFFSET),
    crc: buf.readUInt32BE(offset + CRC_OFFSET),
    attributes: buf.readInt16BE(offset + ATTRIBUTES_OFFSET),
    lastOffsetDelta: buf.readInt32BE(offset + 23),
    baseTimestamp: Number(buf.readBigInt64BE(offset + 27)),
    maxTimestamp: Number(buf.readBigInt64BE(offset + 35)),
    producerId: Number(buf.readBigInt64BE(offset + 43)),
    producerEpoch: buf.readInt16BE(offset + 51),
    baseSequence: buf.readInt32BE(offset + 53),
    recordCount: buf.readInt32BE(offset + 57),
  };
}

export function batchCrcIsValid(batch: Buffer): boolean {
  return crc32c(batch, ATTRIBUTES_OFFSET, batch.length) === batch.readUInt32BE(CRC_OFFSET);
}

export interface SplitBatch {
  header: BatchHeader;
  bytes: Buffer;
}

/**
 * Splits a produce request's records blob into whole, CRC-checked magic-2 batches.
 * Throws BatchFormatError when any batch is malformed so the partition can be rejected atomically.
 */
export function splitProducedBatches(records: Buffer): SplitBatch[] {
  const batches: SplitBatch[] = [];
  let offset = 0;
  while (offset < records.length) {
    if (records.length - offset < BATCH_HEADER_BYTES) {
      throw new BatchFormatError("corrupt", "truncated record batch header");
    }
    const magic = records.readInt8(offset + MAGIC_OFFSET);
    if (magic !== 2) {
      throw new BatchFormatError(
        "unsupported-magic",
        `record batch magic ${magic} is not supported`,
      );
    }
    const header = readBatchHeader(records, offset);
    if (header.sizeBytes < BATCH_HEADER_BYTES || offset + header.sizeBytes > records.length) {
      throw new BatchFormatError("corrupt", "record batch length runs past the records blob");
    }
    const bytes = records.subarray(offset, offset + header.sizeBytes);
    if (!batchCrcIsValid(bytes)) {
      throw new BatchFormatError("corrupt", "record batch CRC-32C mismatch");
    }
    if (header.lastOffsetDelta < 0 || header.recordCount < 0) {
      throw new BatchFormatError("corrupt", "negative record count");
    }
    batches.push({ header, bytes });
    offset += header.sizeBytes;
  }
  return batches;
}

/** Stamps the offset assigned by the log; the CRC does not cover these bytes. */
export function stampBaseOffset(batch: Buffer, baseOffset: number): void {
  batch.writeBigInt64BE(BigInt(baseOffset), 0);
  batch.writeInt32BE(0, 12);
}

const CompressionCodec = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 } as const;

interface DecodedHeader {
  key: string;
  value: Buffer | null;
}

export interface DecodedRecord {
  offset: number;
  timestamp: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: DecodedHeader[];
}

/**
 * Decodes the records of an uncompressed or gzip batch. Used for timestamp lookups and tests;
 * snappy/lz4/zstd return null and callers fall back to batch granularity.
 */
export function decodeBatchRecords(batch: Buffer): DecodedRecord[] | null {
  const header = readBatchHeader(batch);
  const codec = header.attributes & 0x07;
  let body: Buffer = batch.subarray(BATCH_HEADER_BYTES, header.sizeBytes);
  if (codec === CompressionCodec.gzip) {
    body = gunzipSync(body);
  } else if (codec !== CompressionCodec.none) {
    return null;
  }
  const records: DecodedRecord[] = [];
  let pos = 0;
  const readVarint = (): number => {
    const r = decodeVarint(body, pos);
    pos += r.bytes;
    return r.value;
  };
  const readBytes = (): Buffer | null => {
    const length = readVarint();
    if (length < 0) {
      return null;
    }
    const v = body.subarray(pos, pos + length);
    pos += length;
    return v;
  };
  for (let i = 0; i < header.recordCount; i++) {
    const length = readVarint();
    const end = pos + length;
    pos += 1; // record attributes, unused
    const timestampDelta = decodeVarlong(body, pos);
    pos += timestampDelta.bytes;
    const offsetDelta = readVarint();
    const key = readBytes();
    const value = readBytes();
    const headerCount = readVarint();
    const headers: DecodedHeader[] = [];
    for (let h = 0; h < headerCount; h++) {
      const headerKey = readBytes();
      headers.push({ key: headerKey?.toString("utf8") ?? "", value: readBytes() });
    }
    records.push({
      offset: header.baseOffset + offsetDelta,
      timestamp: header.baseTimestamp + Number(timestampDelta.value),
      key,
      value,
      headers,
    });
    pos = end;
  }
  return records;
}
