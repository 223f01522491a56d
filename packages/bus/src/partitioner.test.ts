import { randomBytes, randomInt } from "node:crypto";
import { type PartitionerArgs, Partitioners } from "kafkajs";
import { describe, expect, it } from "vitest";
import { KeylessPlacement, murmur2, partitionOfKey } from "./partitioner.ts";

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
        expect(partitionOfKey(key, count), `${String(key)} over ${count}`).toBe(
          theirs(args({ key, value: null }, count)),
        );
      }
    }
  });

  it("spreads keyless records over the partitions that have a leader", () => {
    const placement = new KeylessPlacement();
    const seen = new Set<number>();
    for (let index = 0; index < 40; index++) {
      seen.add(placement.next("t", [true, false, true, true]));
    }
    expect([...seen].sort()).toEqual([0, 2, 3]);
  });
});
