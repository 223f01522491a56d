import { randomBytes, randomInt } from "node:crypto";
import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { crc32c } from "./index.ts";

// kafkajs's byte-at-a-time CRC-32C, an independent implementation to agree with.
const kafkajsCrc32c = createRequire(import.meta.url)(
  "kafkajs/src/protocol/recordBatch/crc32C/index.js",
) as (data: Buffer) => number;

describe("CRC-32C of record batches", () => {
  it("gives the published check value of CRC-32C (Castagnoli)", () => {
    expect(crc32c(Buffer.from("123456789"))).toBe(0xe3069283);
    expect(crc32c(Buffer.alloc(0))).toBe(0);
    expect(crc32c(Buffer.alloc(32))).toBe(0x8a9136aa);
  });

  it("agrees with kafkajs's checksum on data of every length and alignment", () => {
    for (let index = 0; index < 500; index++) {
      const data = randomBytes(randomInt(0, 3000));
      const start = randomInt(0, Math.min(16, data.length + 1));
      const end = randomInt(start, data.length + 1);
      expect(crc32c(data, start, end), `${data.length} bytes [${start}, ${end})`).toBe(
        kafkajsCrc32c(data.subarray(start, end)),
      );
    }
  });
});
