// One partition's log: a list of segments, offset assignment, reads of whole batches, timestamp
// lookups, idempotent-producer sequence tracking and retention.
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { type BatchHeader, decodeBatchRecords, stampBaseOffset } from "../protocol/records.ts";
import type { Flusher } from "./flusher.ts";
import { Segment } from "./segment.ts";
import type { TopicConfig } from "./topic-config.ts";

const PRODUCER_BATCHES_REMEMBERED = 5;

interface ProducerBatch {
  firstSequence: number;
  lastSequence: number;
  baseOffset: number;
}

interface ProducerState {
  epoch: number;
  batches: ProducerBatch[];
}

export type SequenceCheck =
  | { kind: "new" }
  | { kind: "duplicate"; baseOffset: number }
  | { kind: "out-of-order" }
  | { kind: "fenced" };

export interface AppendableBatch {
  header: BatchHeader;
  bytes: Buffer;
}

export class PartitionLog {
  readonly topic: string;
  readonly partition: number;
  config: TopicConfig;
  private readonly dir: string | null;
  private readonly flusher: Flusher | null;
  private segments: Segment[] = [];
  private producers = new Map<number, ProducerState>();
  logEndOffset = 0;
  maxProducerIdSeen = -1;
  recoveredTruncatedBytes = 0;

  constructor(
    topic: string,
    partition: number,
    config: TopicConfig,
    dir: string | null,
    flusher: Flusher | null,
  ) {
    this.topic = topic;
    this.partition = partition;
    this.config = config;
    this.dir = dir;
    this.flusher = flusher;
    if (dir === null) {
      this.segments.push(Segment.inMemory(0));
      return;
    }
    mkdirSync(dir, { recursive: true });
    const baseOffsets = readdirSync(dir)
      .filter((name) => /^\d{20}\.log$/.test(name))
      .map((name) => Number(name.slice(0, 20)))
      .sort((a, b) => a - b);
    for (const baseOffset of baseOffsets) {
      if (this.recoveredTruncatedBytes > 0) {
        // Anything after a torn segment cannot be trusted to be contiguous.
        Segment.createFile(dir, baseOffset).delete();
        continue;
      }
      const { segment, truncatedBytes } = Segment.recoverFile(dir, baseOffset, (header) =>
        this.recordProducerBatch(header, header.baseOffset),
      );
      this.recoveredTruncatedBytes += truncatedBytes;
      this.segments.push(segment);
      this.logEndOffset = segment.nextOffset;
    }
    if (this.segments.length === 0) {
      this.segments.push(Segment.createFile(dir, 0));
    }
  }

  get logStartOffset(): number {
    const first = this.segments[0] as Segment;
    const firstEntry = first.entries[0];
    return firstEntry ? firstEntry.baseOffset : first.baseOffset;
  }

  get sizeBytes(): number {
    let total = 0;
    for (const s of this.segments) {
      total += s.sizeBytes;
    }
    return total;
  }

  get segmentCount(): number {
    return this.segments.length;
  }

  private get activeSegment(): Segment {
    return this.segments[this.segments.length - 1] as Segment;
  }

  checkSequence(header: BatchHeader): SequenceCheck {
    if (header.producerId < 0) {
      return { kind: "new" };
    }
    const state = this.producers.get(header.producerId);
    if (state === undefined || header.producerEpoch > state.epoch) {
      return header.baseSequence === 0 || state === undefined
        ? { kind: "new" }
        : { kind: "out-of-order" };
    }
    if (header.producerEpoch < state.epoch) {
      return { kind: "fenced" };
    }
    for (const b of state.batches) {
      if (b.firstSequence === header.baseSequence) {
        return { kind: "duplicate", baseOffset: b.baseOffset };
      }
    }
    const last = state.batches[state.batches.length - 1];
    const expected = last === undefined ? 0 : (last.lastSequence + 1) | 0;
    return header.baseSequence === expected ? { kind: "new" } : { kind: "out-of-order" };
  }

  private recordProducerBatch(header: BatchHeader, baseOffset: number): void {
    if (header.producerId < 0) {
      return;
    }
    if (header.producerId > this.maxProducerIdSeen) {
      this.maxProducerIdSeen = header.producerId;
    }
    let state = this.producers.get(header.producerId);
    if (state === undefined || header.producerEpoch > state.epoch) {
      state = { epoch: header.producerEpoch, batches: [] };
      this.producers.set(header.producerId, state);
    }
    state.batches.push({
      firstSequence: header.baseSequence,
      lastSequence: (header.baseSequence + header.lastOffsetDelta) | 0,
      baseOffset,
    });
    if (state.batches.length > PRODUCER_BATCHES_REMEMBERED) {
      state.batches.shift();
    }
  }

  /** Appends already validated batches; returns the first assigned offset. */
  append(batches: AppendableBatch[], now: number): number {
    const firstOffset = this.logEndOffset;
    for (const { header, bytes } of batches) {
      if (this.shouldRoll(bytes.length, now)) {
        this.roll();
      }
      const baseOffset = this.logEndOffset;
      stampBaseOffset(bytes, baseOffset);
      this.activeSegment.append(bytes, { ...header, baseOffset });
      this.recordProducerBatch(header, baseOffset);
      this.logEndOffset = baseOffset + header.lastOffsetDelta + 1;
      this.flusher?.markDirty(this.activeSegment);
    }
    return firstOffset;
  }

  private shouldRoll(incomingBytes: number, now: number): boolean {
    const active = this.activeSegment;
    if (active.entries.length === 0) {
      return false;
    }
    return (
      active.sizeBytes + incomingBytes > this.config.segmentBytes ||
      now - active.createdAt >= this.config.segmentMs
    );
  }

  private roll(): void {
    const baseOffset = this.logEndOffset;
    this.segments.push(
      this.dir === null ? Segment.inMemory(baseOffset) : Segment.createFile(this.dir, baseOffset),
    );
  }

  /**
   * Whole batches starting with the one containing `fetchOffset`, within `maxBytes` unless
   * `atLeastOne` asks for the first batch regardless of size (so oversized batches make progress).
   */
  read(fetchOffset: number, maxBytes: number, atLeastOne: boolean): Buffer | null {
    if (fetchOffset >= this.logEndOffset) {
      return null;
    }
    let segmentIndex = this.segments.length - 1;
    while (segmentIndex > 0 && (this.segments[segmentIndex] as Segment).baseOffset > fetchOffset) {
      segmentIndex--;
    }
    for (; segmentIndex < this.segments.length; segmentIndex++) {
      const segment = this.segments[segmentIndex] as Segment;
      const from = segment.findEntry(fetchOffset);
      if (from < 0) {
        continue;
      }
      let to = from;
      let bytes = 0;
      while (to < segment.entries.length) {
        const size = (segment.entries[to] as (typeof segment.entries)[number]).size;
        if (bytes + size > maxBytes && !(atLeastOne && to === from)) {
          break;
        }
        bytes += size;
        to++;
      }
      return to > from ? segment.read(from, to) : null;
    }
    return null;
  }

  /** First offset whose record timestamp is >= `timestamp` (ListOffsets), or null. */
  offsetForTimestamp(timestamp: number): { offset: number; timestamp: number } | null {
    for (const segment of this.segments) {
      if (segment.maxTimestamp < timestamp) {
        continue;
      }
      for (let i = 0; i < segment.entries.length; i++) {
        const entry = segment.entries[i] as (typeof segment.entries)[number];
        if (entry.maxTimestamp < timestamp) {
          continue;
        }
        const records = decodeBatchRecords(segment.read(i, i + 1));
        if (records === null) {
          return { offset: entry.baseOffset, timestamp: entry.maxTimestamp };
        }
        const match = records.find((r) => r.timestamp >= timestamp);
        if (match) {
          return { offset: match.offset, timestamp: match.timestamp };
        }
      }
    }
    return null;
  }

  /** Drops whole closed segments beyond retention.ms / retention.bytes. Returns bytes freed. */
  enforceRetention(now: number): number {
    const { retentionMs, retentionBytes } = this.config;
    const active = this.activeSegment;
    if (
      retentionMs >= 0 &&
      active.entries.length > 0 &&
      active.maxTimestamp >= 0 &&
      now - active.maxTimestamp > retentionMs
    ) {
      // Everything in the active segment has expired; roll so it becomes eligible like Kafka's segment.ms.
      this.roll();
    }
    let freed = 0;
    let total = this.sizeBytes;
    while (this.segments.length > 1) {
      const oldest = this.segments[0] as Segment;
      const expiredByTime = retentionMs >= 0 && now - oldest.maxTimestamp > retentionMs;
      const overSize = retentionBytes >= 0 && total - oldest.sizeBytes >= retentionBytes;
      if (!expiredByTime && !overSize) {
        break;
      }
      this.segments.shift();
      this.flusher?.forget(oldest);
      oldest.delete();
      freed += oldest.sizeBytes;
      total -= oldest.sizeBytes;
    }
    return freed;
  }

  close(): void {
    for (const s of this.segments) {
      this.flusher?.forget(s);
      s.close();
    }
  }

  destroy(): void {
    for (const s of this.segments) {
      this.flusher?.forget(s);
      s.delete();
    }
    this.segments = [];
    if (this.dir !== null) {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}
