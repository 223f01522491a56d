import { createRequire } from "node:module";
import { crc32c } from "@th/crc32c";
import { describe, expect, it } from "vitest";
import { encodeHeaders, PartitionBatches, RecordBatchWriter } from "./record-batch.ts";

// kafkajs's record batch decoder: an independent reader of the same format.
const require = createRequire(import.meta.url);
const KafkajsDecoder = require("kafkajs/src/protocol/decoder.js") as new (
  buffer: Buffer,
) => unknown;
const decodeBatch = require("kafkajs/src/protocol/recordBatch/v0/decoder.js") as (
  decoder: unknown,
) => Promise<{
  firstOffset: string;
  lastOffsetDelta: number;
  firstTimestamp: string;
  maxTimestamp: string;
  producerId: string;
  producerEpoch: number;
  firstSequence: number;
  inTransaction: boolean;
  isControlBatch: boolean;
  records: {
    key: Buffer | null;
    value: Buffer | null;
    offset: string;
    timestamp: string;
    headers: Record<string, Buffer | Buffer[]>;
  }[];
}>;

const read = (batch: Buffer) => decodeBatch(new KafkajsDecoder(batch));

describe("record batches written for the broker", () => {
  it("are read back by kafkajs's decoder with every key, value, header and offset delta", async () => {
    const at = Date.UTC(2026, 10, 24, 12, 0, 0, 123);
    const writer = new RecordBatchWriter(at, 64);
    const shared = encodeHeaders({ "th-schema": "parcel.ingested/v3", traceparent: "00-abc-01" });
    writer.add("23-0123456789", Buffer.from("first"), shared);
    writer.add("é-ünïcödé-€", Buffer.alloc(5000, 7), encodeHeaders({ only: "mine" }));
    writer.add(null, null, encodeHeaders({}));
    writer.add(Buffer.from([0, 1, 2]), Buffer.alloc(0), shared);
    const batch = writer.finish();

    const decoded = await read(batch);
    expect(decoded.lastOffsetDelta).toBe(3);
    expect(decoded.firstTimestamp).toBe(String(at));
    expect(decoded.maxTimestamp).toBe(String(at));
    expect(decoded.producerId).toBe("-1");
    expect(decoded.producerEpoch).toBe(-1);
    expect(decoded.firstSequence).toBe(-1);
    expect(decoded.inTransaction).toBe(false);
    expect(decoded.isControlBatch).toBe(false);
    const records = decoded.records;
    expect(records.map((record) => record.offset)).toEqual(["0", "1", "2", "3"]);
    expect(records.every((record) => record.timestamp === String(at))).toBe(true);
    expect(records[0]?.key?.toString()).toBe("23-0123456789");
    expect(records[0]?.value?.toString()).toBe("first");
    expect(records[0]?.headers["th-schema"]?.toString()).toBe("parcel.ingested/v3");
    expect(records[0]?.headers.traceparent?.toString()).toBe("00-abc-01");
    expect(records[1]?.key?.toString()).toBe("é-ünïcödé-€");
    expect(records[1]?.value).toEqual(Buffer.alloc(5000, 7));
    expect(Object.keys(records[1]?.headers ?? {})).toEqual(["only"]);
    expect(records[2]?.key).toBeNull();
    expect(records[2]?.value).toBeNull();
    expect(records[2]?.headers).toEqual({});
    expect(records[3]?.key).toEqual(Buffer.from([0, 1, 2]));
    expect(records[3]?.value).toEqual(Buffer.alloc(0));
  });

  it("carry the magic byte, their length and a CRC-32C over everything after it", () => {
    const writer = new RecordBatchWriter(1, 16);
    writer.add("k", Buffer.from("v"), encodeHeaders({}));
    const batch = writer.finish();
    expect(batch.readInt8(16)).toBe(2);
    expect(batch.readInt32BE(8)).toBe(batch.length - 12);
    expect(batch.readInt32BE(57)).toBe(1);
    expect(batch.readUInt32BE(17)).toBe(crc32c(batch, 21));
    const flipped = Buffer.from(batch);
    flipped.writeUInt8(flipped.readUInt8(flipped.length - 2) ^ 1, flipped.length - 2);
    expect(crc32c(flipped, 21)).not.toBe(batch.readUInt32BE(17));
  });

  it("split a partition's records into batches under the size limit, in order", async () => {
    const batches = new PartitionBatches({
      timestamp: 5,
      expectedRecords: 30,
      partitions: 2,
      maxBatchBytes: 1000,
    });
    const headers = encodeHeaders({ h: "v" });
    for (let index = 0; index < 30; index++) {
      batches.add(index % 2, `key-${index}`, Buffer.alloc(100, index), headers);
    }
    const done = batches.finish();
    expect([...done.keys()].sort()).toEqual([0, 1]);
    for (const [partition, list] of done) {
      expect(list.length).toBeGreaterThan(1);
      const keys: string[] = [];
      for (const batch of list) {
        expect(batch.length).toBeLessThanOrEqual(1000);
        for (const record of (await read(batch)).records) {
          keys.push(record.key?.toString() ?? "");
        }
      }
      const expected = Array.from({ length: 15 }, (_, index) => `key-${index * 2 + partition}`);
      expect(keys).toEqual(expected);
    }
  });
});
