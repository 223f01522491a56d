import { randomBytes, randomInt } from "node:crypto";
import { type PartitionerArgs, Partitioners } from "kafkajs";
import { describe, expect, it } from "vitest";
import { keyHashPartitioner, murmur2 } from "./partitioner.ts";

const metadata = (count: number, leaderless: number[] = []) =>
  Array.from({ length: count }, (_, partitionId) => ({
    partitionId,
    leader: leaderless.includes(partitionId) ? -1 : 0,
    partitionErrorCode: 0,
    replicas: [0],
    isr: [0],
  }));

const args = (message: PartitionerArgs["message"], count: number): PartitionerArgs => ({
  topic: "parcel.ingested",
  partitionMetadata: metadata(count),
  message,
});

describe("key-hash partitioner", () => {
  it("hashes as Kafka's Java client does (reference values of Utils.murmur2)", () => {
    // Published test vectors of org.apache.kafka.common.utils.Utils.murmur2.
    expect(murmur2(Buffer.from("21"))).toBe(-973932308);
    expect(murmur2(Buffer.from("foobar"))).toBe(-790332482);
    expect(murmur2(Buffer.from("a-little-bit-long-string"))).toBe(-985981536);
    expect(murmur2(Buffer.from("a-little-bit-longer-string"))).toBe(-1486304829);
    expect(murmur2(Buffer.from("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"))).toBe(
      -58897971,
    );
    expect(murmur2(Buffer.from([0x61, 0x62, 0x63]))).toBe(479470107);
  });

  it("sends every keyed record to the partition kafkajs's default partitioner picks", () => {
    const ours = keyHashPartitioner();
    const theirs = Partitioners.DefaultPartitioner();
    const keys: (string | Buffer)[] = [
      "",
      "12-0123456789",
      "é-ünïcödé-folio-€",
      "x".repeat(300),
      "🏠".repeat(90),
    ];
    for (let index = 0; index < 2000; index++) {
      keys.push(randomBytes(randomInt(0, 40)).toString("base64url"));
      keys.push(randomBytes(randomInt(0, 40)));
    }
    for (const key of keys) {
      for (const count of [1, 3, 8, 12, 50]) {
        expect(ours(args({ key, value: null }, count)), `${String(key)} over ${count}`).toBe(
          theirs(args({ key, value: null }, count)),
        );
      }
    }
  });

  it("keeps an explicit partition, and spreads keyless records over partitions with a leader", () => {
    const ours = keyHashPartitioner();
    expect(ours(args({ key: "folio", value: null, partition: 5 }, 8))).toBe(5);
    const seen = new Set<number>();
    for (let index = 0; index < 40; index++) {
      seen.add(
        ours({
          topic: "t",
          partitionMetadata: metadata(4, [1]),
          message: { value: "v" },
        }),
      );
    }
    expect([...seen].sort()).toEqual([0, 2, 3]);
  });
});
