import { describe, expect, test, vi } from "vitest";
import { FrameDecoder, FrameTooLargeError } from "./protocol/frame-decoder.ts";
import { Reader } from "./protocol/reader.ts";
import {
  BatchFormatError,
  batchCrcIsValid,
  decodeBatchRecords,
  readBatchHeader,
  splitProducedBatches,
  stampBaseOffset,
} from "./protocol/records.ts";
import {
  decodeVarint,
  decodeVarlong,
  encodeVarint,
  encodeVarlong,
  zigzagDecode32,
  zigzagEncode32,
} from "./protocol/varint.ts";
import { Writer } from "./protocol/writer.ts";
import { kafkajsRequire } from "./test-support/raw-client.ts";

const kafkajsEncoder = kafkajsRequire("kafkajs/src/protocol/encoder");
const kafkajsDecoder = kafkajsRequire("kafkajs/src/protocol/decoder");
const { RecordBatch } = kafkajsRequire("kafkajs/src/protocol/recordBatch/v0");
const Record = kafkajsRequire("kafkajs/src/protocol/recordBatch/record/v0");
const { Types: CompressionTypes } = kafkajsRequire("kafkajs/src/protocol/message/compression");

describe("varint and zigzag", () => {
  const int32Edges = [0, -1, 1, 63, -64, 64, 2 ** 31 - 1, -(2 ** 31), 300, -300];

  test.each(int32Edges)("varint %d round-trips and matches kafkajs", (value) => {
    const ours = encodeVarint(value);
    expect(ours.equals(new kafkajsEncoder().writeVarInt(value).buffer)).toBe(true);
    expect(decodeVarint(ours, 0)).toEqual({ value, bytes: ours.length });
  });

  test("zigzag maps small magnitudes to small codes", () => {
    expect([0, -1, 1, -2, 2].map(zigzagEncode32)).toEqual([0, 1, 2, 3, 4]);
    expect(zigzagEncode32(-(2 ** 31))).toBe(0xffffffff);
    expect(zigzagDecode32(0xffffffff)).toBe(-(2 ** 31));
  });

  const int64Edges = [0n, -1n, 2n ** 31n, -(2n ** 31n), 2n ** 63n - 1n, -(2n ** 63n)];

  test.each(int64Edges)("varlong %s round-trips and kafkajs decodes it", (value) => {
    const ours = encodeVarlong(value);
    expect(decodeVarlong(ours, 0)).toEqual({ value, bytes: ours.length });
    expect(new kafkajsDecoder(ours).readVarLong().toString()).toBe(value.toString());
  });

  test("2^63-1 takes ten bytes and truncated input is rejected", () => {
    const max = encodeVarlong(2n ** 63n - 1n);
    expect(max.length).toBe(10);
    expect(() => decodeVarlong(max.subarray(0, 9), 0)).toThrow(RangeError);
    expect(() => decodeVarint(Buffer.from([0x80, 0x80]), 0)).toThrow(RangeError);
  });
});

describe("frame decoder", () => {
  const frame = (body: string): Buffer => {
    const b = Buffer.from(body);
    const size = Buffer.alloc(4);
    size.writeInt32BE(b.length);
    return Buffer.concat([size, b]);
  };

  test("a frame split across many TCP reads is reassembled", () => {
    const decoder = new FrameDecoder(1024);
    const bytes = Buffer.concat([frame("hello world"), frame("second")]);
    const out: string[] = [];
    for (let i = 0; i < bytes.length; i++) {
      out.push(...decoder.push(bytes.subarray(i, i + 1)).map((f) => f.toString()));
    }
    expect(out).toEqual(["hello world", "second"]);
  });

  test("several frames in one chunk, plus a partial one", () => {
    const decoder = new FrameDecoder(1024);
    const bytes = Buffer.concat([frame("a"), frame("bb"), frame("ccc")]);
    expect(decoder.push(bytes.subarray(0, bytes.length - 2)).map(String)).toEqual(["a", "bb"]);
    expect(decoder.push(bytes.subarray(bytes.length - 2)).map(String)).toEqual(["ccc"]);
  });

  test("oversized frames are refused", () => {
    const decoder = new FrameDecoder(8);
    expect(() => decoder.push(frame("123456789"))).toThrow(FrameTooLargeError);
  });

  test("joins a large frame's chunks once it is whole, not on every chunk (TLS hands over 16 KiB)", () => {
    const decoder = new FrameDecoder(4 * 1024 * 1024);
    const body = Buffer.alloc(1024 * 1024, 7);
    const bytes = Buffer.concat([frame(body.toString("latin1")), frame("next")]);
    const concat = vi.spyOn(Buffer, "concat");
    const out: Buffer[] = [];
    try {
      for (let from = 0; from < bytes.length; from += 16 * 1024) {
        out.push(...decoder.push(bytes.subarray(from, from + 16 * 1024)));
      }
      expect(concat.mock.calls.length).toBe(1);
    } finally {
      concat.mockRestore();
    }
    expect(out).toHaveLength(2);
    expect(out[0]?.equals(body)).toBe(true);
    expect(String(out[1])).toBe("next");
  });
});

describe("reader and writer", () => {
  test("primitives round-trip, including nulls", () => {
    const buf = new Writer(4)
      .int8(-3)
      .int16(-2)
      .int32(70000)
      .int64(2n ** 62n)
      .string("héllo")
      .nullableString(null)
      .bytes(Buffer.alloc(100, 7))
      .nullableBytes(null)
      .array([1, 2, 3], (w, v) => w.int32(v))
      .nullableArray(null, (w, v: number) => w.int32(v))
      .toBuffer();
    const r = new Reader(buf);
    expect(r.int8()).toBe(-3);
    expect(r.int16()).toBe(-2);
    expect(r.int32()).toBe(70000);
    expect(r.int64()).toBe(2n ** 62n);
    expect(r.string()).toBe("héllo");
    expect(r.nullableString()).toBeNull();
    expect(r.bytes().equals(Buffer.alloc(100, 7))).toBe(true);
    expect(r.nullableBytes()).toBeNull();
    expect(r.array((x) => x.int32())).toEqual([1, 2, 3]);
    expect(r.nullableArray((x) => x.int32())).toBeNull();
    expect(r.remaining).toBe(0);
    expect(() => r.int8()).toThrow();
  });

  test("flexible-version fields: unsigned varints, compact strings and arrays, tagged fields", () => {
    const buf = new Writer(4)
      .unsignedVarint(300)
      .unsignedVarint(2 ** 32 - 1)
      .compactArray([7, 8], (w, v) => w.int16(v))
      .noTaggedFields()
      .toBuffer();
    expect([...buf.subarray(0, 2)]).toEqual([0xac, 0x02]); // 300, low group first, no zigzag
    const r = new Reader(buf);
    expect(r.unsignedVarint()).toBe(300);
    expect(r.unsignedVarint()).toBe(2 ** 32 - 1);
    expect(r.unsignedVarint() - 1).toBe(2);
    expect([r.int16(), r.int16()]).toEqual([7, 8]);
    expect(r.unsignedVarint()).toBe(0);
    expect(r.remaining).toBe(0);

    // A compact string "ab", a null one, then two tagged fields (tag 0: 3 bytes, tag 5: 0 bytes).
    const flexible = new Reader(Buffer.from([3, 0x61, 0x62, 0, 2, 0, 3, 1, 2, 3, 5, 0, 0x7f]));
    expect(flexible.compactString()).toBe("ab");
    expect(flexible.compactNullableString()).toBeNull();
    flexible.skipTaggedFields();
    expect(flexible.int8()).toBe(0x7f);
    expect(() =>
      new Reader(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x1f])).unsignedVarint(),
    ).toThrow();
  });
});

async function kafkajsBatch(compression: number, messages: number): Promise<Buffer> {
  const now = Date.now();
  const records = Array.from({ length: messages }, (_, i) =>
    Record({
      key: Buffer.from(`k${i}`),
      value: Buffer.from(`value-${i}`),
      headers: { trace: Buffer.from(`t${i}`) },
      offsetDelta: i,
      timestampDelta: i,
    }),
  );
  const encoded = await RecordBatch({
    compression,
    records,
    firstTimestamp: now,
    maxTimestamp: now + messages - 1,
    lastOffsetDelta: messages - 1,
  });
  return Buffer.from(encoded.buffer);
}

describe("record batch v2", () => {
  test("splits kafkajs batches, checks the CRC and stamps offsets outside it", async () => {
    const a = await kafkajsBatch(CompressionTypes.None, 3);
    const b = await kafkajsBatch(CompressionTypes.GZIP, 5);
    const batches = splitProducedBatches(Buffer.concat([a, b]));
    expect(batches.map((x) => x.header.recordCount)).toEqual([3, 5]);
    expect(batches[1]?.header.attributes).toBe(1);
    const first = batches[0]?.bytes as Buffer;
    stampBaseOffset(first, 42);
    expect(readBatchHeader(first).baseOffset).toBe(42);
    expect(batchCrcIsValid(first)).toBe(true);
  });

  test("decodes plain and gzip records, keys, values and headers", async () => {
    for (const codec of [CompressionTypes.None, CompressionTypes.GZIP]) {
      const batch = await kafkajsBatch(codec, 4);
      stampBaseOffset(batch, 100);
      const records = decodeBatchRecords(batch);
      expect(records?.map((r) => r.offset)).toEqual([100, 101, 102, 103]);
      expect(records?.[2]?.key?.toString()).toBe("k2");
      expect(records?.[2]?.value?.toString()).toBe("value-2");
      expect(records?.[2]?.headers).toEqual([{ key: "trace", value: Buffer.from("t2") }]);
    }
  });

  test("rejects a flipped byte, a truncated batch and an old magic", async () => {
    const batch = await kafkajsBatch(CompressionTypes.None, 2);
    const flipped = Buffer.from(batch);
    flipped[flipped.length - 1] = (flipped[flipped.length - 1] as number) ^ 0xff;
    expect(() => splitProducedBatches(flipped)).toThrow(/CRC/);
    expect(() => splitProducedBatches(batch.subarray(0, batch.length - 1))).toThrow(
      BatchFormatError,
    );
    const oldMagic = Buffer.from(batch);
    oldMagic[16] = 1;
    expect(() => splitProducedBatches(oldMagic)).toThrow(/magic/);
  });
});
