import { randomInt } from "node:crypto";

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/**
 * Kafka's murmur2 of a key's bytes, as the Java client's default partitioner computes it, in
 * 32-bit integer arithmetic (kafkajs computes the same hash through 64-bit Long objects, several
 * allocations per byte group).
 */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = (SEED ^ length) | 0;
  const whole = length & ~3;
  for (let index = 0; index < whole; index += 4) {
    let k =
      (data[index] as number) |
      ((data[index + 1] as number) << 8) |
      ((data[index + 2] as number) << 16) |
      ((data[index + 3] as number) << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  // The last one to three bytes fold in from the highest down, then mix once.
  const tail = length & 3;
  if (tail > 0) {
    if (tail === 3) {
      h ^= (data[whole + 2] as number) << 16;
    }
    if (tail >= 2) {
      h ^= (data[whole + 1] as number) << 8;
    }
    h ^= data[whole] as number;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h;
}

/** Room for the UTF-8 bytes of most keys (folios, ids); longer keys get a buffer of their own. */
const scratch = Buffer.allocUnsafe(256);

function keyBytes(key: Buffer | string): Uint8Array {
  if (typeof key !== "string") {
    return key;
  }
  if (key.length * 3 <= scratch.length) {
    return scratch.subarray(0, scratch.write(key));
  }
  return Buffer.from(key);
}

/** The partition of a record with this key among `count` partitions. */
export function partitionOfKey(key: Buffer | string, count: number): number {
  return (murmur2(keyBytes(key)) & 0x7fffffff) % count;
}

/**
 * Places records without a key (parked copies of keyless records) round-robin over the
 * partitions that have a leader, as Kafka's clients do, starting at a random one per topic.
 */
export class KeylessPlacement {
  readonly #counters = new Map<string, number>();

  next(topic: string, hasLeader: readonly boolean[]): number {
    const counter = ((this.#counters.get(topic) ?? randomInt(2 ** 31)) + 1) & 0x7fffffff;
    this.#counters.set(topic, counter);
    const available: number[] = [];
    for (const [partition, led] of hasLeader.entries()) {
      if (led) {
        available.push(partition);
      }
    }
    if (available.length === 0) {
      return counter % hasLeader.length;
    }
    return available[counter % available.length] as number;
  }
}
