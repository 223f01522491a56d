// A log segment: record batches back to back, exactly as on the wire (the Kafka segment format), plus
// an in-memory index rebuilt from the batch headers. In-memory segments keep the batch buffers; file
// segments append with a synchronous write so data reaches the OS before any response is sent.
import {
  closeSync,
  fdatasync,
  ftruncateSync,
  openSync,
  readFileSync,
  readSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import {
  BATCH_HEADER_BYTES,
  type BatchHeader,
  batchCrcIsValid,
  readBatchHeader,
} from "../protocol/records.ts";
import type { Syncable } from "./flusher.ts";

export interface BatchIndexEntry {
  baseOffset: number;
  lastOffset: number;
  maxTimestamp: number;
  position: number;
  size: number;
}

function segmentFileName(baseOffset: number): string {
  return `${String(baseOffset).padStart(20, "0")}.log`;
}

export class Segment implements Syncable {
  readonly baseOffset: number;
  readonly entries: BatchIndexEntry[] = [];
  readonly createdAt: number;
  sizeBytes = 0;
  maxTimestamp = -1;
  private readonly memory: Buffer[] | null;
  private readonly path: string | null;
  private fd: number | null;
  private syncing: Promise<void> | null = null;
  private deleted = false;

  private constructor(baseOffset: number, path: string | null, fd: number | null) {
    this.baseOffset = baseOffset;
    this.path = path;
    this.fd = fd;
    this.memory = path === null ? [] : null;
    this.createdAt = Date.now();
  }

  static inMemory(baseOffset: number): Segment {
    return new Segment(baseOffset, null, null);
  }

  static createFile(dir: string, baseOffset: number): Segment {
    const path = join(dir, segmentFileName(baseOffset));
    return new Segment(baseOffset, path, openSync(path, "w+"));
  }

  /**
   * Opens an existing segment file and rebuilds its index. A torn or corrupt tail (short batch,
   * bad CRC, offsets going backwards) is truncated to the last whole batch.
   */
  static recoverFile(
    dir: string,
    baseOffset: number,
    onBatch: (header: BatchHeader) => void,
  ): { segment: Segment; truncatedBytes: number } {
    const path = join(dir, segmentFileName(baseOffset));
    const data = readFileSync(path);
    const segment = new Segment(baseOffset, path, openSync(path, "r+"));
    let position = 0;
    let expectedOffset = baseOffset;
    while (data.length - position >= BATCH_HEADER_BYTES) {
      const header = readBatchHeader(data, position);
      if (
        header.magic !== 2 ||
        header.sizeBytes < BATCH_HEADER_BYTES ||
        position + header.sizeBytes > data.length ||
        header.baseOffset < expectedOffset ||
        !batchCrcIsValid(data.subarray(position, position + header.sizeBytes))
      ) {
        break;
      }
      segment.index(header, position);
      onBatch(header);
      expectedOffset = header.baseOffset + header.lastOffsetDelta + 1;
      position += header.sizeBytes;
    }
    const truncatedBytes = data.length - position;
    if (truncatedBytes > 0) {
      ftruncateSync(segment.fd as number, position);
    }
    return { segment, truncatedBytes };
  }

  get nextOffset(): number {
    const last = this.entries[this.entries.length - 1];
    return last ? last.lastOffset + 1 : this.baseOffset;
  }

  private index(header: BatchHeader, position: number): void {
    this.entries.push({
      baseOffset: header.baseOffset,
      lastOffset: header.baseOffset + header.lastOffsetDelta,
      maxTimestamp: header.maxTimestamp,
      position,
      size: header.sizeBytes,
    });
    this.sizeBytes = position + header.sizeBytes;
    if (header.maxTimestamp > this.maxTimestamp) {
      this.maxTimestamp = header.maxTimestamp;
    }
  }

  /** `batch` must already carry its assigned baseOffset. */
  append(batch: Buffer, header: BatchHeader): void {
    const position = this.sizeBytes;
    if (this.memory !== null) {
      this.memory.push(Buffer.from(batch));
    } else {
      let written = 0;
      while (written < batch.length) {
        // Positional writes: a recovered segment is opened r+, where the file offset starts at 0.
        written += writeSync(
          this.fd as number,
          batch,
          written,
          batch.length - written,
          position + written,
        );
      }
    }
    this.index(header, position);
  }

  /** Index of the batch containing `offset`, or -1. */
  findEntry(offset: number): number {
    let low = 0;
    let high = this.entries.length - 1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      const entry = this.entries[mid] as BatchIndexEntry;
      if (entry.lastOffset < offset) {
        low = mid + 1;
      } else if (entry.baseOffset > offset) {
        high = mid - 1;
      } else {
        return mid;
      }
    }
    return low < this.entries.length ? low : -1;
  }

  /** Whole batches [from, to) as one contiguous buffer. */
  read(from: number, to: number): Buffer {
    if (this.memory !== null) {
      return to - from === 1
        ? (this.memory[from] as Buffer)
        : Buffer.concat(this.memory.slice(from, to));
    }
    const first = this.entries[from] as BatchIndexEntry;
    const last = this.entries[to - 1] as BatchIndexEntry;
    const length = last.position + last.size - first.position;
    const out = Buffer.allocUnsafe(length);
    let done = 0;
    while (done < length) {
      const n = readSync(this.fd as number, out, done, length - done, first.position + done);
      if (n === 0) {
        throw new Error(`segment ${this.path} shorter than its index`);
      }
      done += n;
    }
    return out;
  }

  sync(): Promise<void> {
    const fd = this.fd;
    if (fd === null || this.deleted) {
      return Promise.resolve();
    }
    const running = new Promise<void>((resolve, reject) => {
      fdatasync(fd, (error) => (error ? reject(error) : resolve()));
    }).finally(() => {
      this.syncing = null;
      if (this.deleted) {
        this.closeFd();
      }
    });
    this.syncing = running;
    return running;
  }

  private closeFd(): void {
    if (this.fd !== null) {
      closeSync(this.fd);
      this.fd = null;
    }
  }

  close(): void {
    if (this.syncing === null) {
      this.closeFd();
    } else {
      this.deleted = true;
    }
  }

  delete(): void {
    this.deleted = true;
    if (this.syncing === null) {
      this.closeFd();
    }
    if (this.path !== null) {
      try {
        unlinkSync(this.path);
      } catch {
        // already gone, e.g. the whole topic directory was removed
      }
    }
    if (this.memory !== null) {
      this.memory.length = 0;
    }
  }
}
