// Splits a TCP byte stream into Kafka frames (int32 size prefix). A frame may arrive in any number of
// chunks and a chunk may carry several frames.

export class FrameTooLargeError extends Error {}

export class FrameDecoder {
  private maxFrameBytes: number;
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(maxFrameBytes: number) {
    this.maxFrameBytes = maxFrameBytes;
  }

  /** Changes the limit for frames not yet started (a connection's limit grows once authenticated). */
  setLimit(maxFrameBytes: number): void {
    this.maxFrameBytes = maxFrameBytes;
  }

  /** Returns every complete frame body (without the size prefix) now available. */
  push(chunk: Buffer): Buffer[] {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    const frames: Buffer[] = [];
    if (this.pendingBytes < 4) {
      return frames;
    }
    // Join the chunks only once the first frame is whole: a TLS socket hands over 16 KiB at a
    // time, and joining on every chunk copied a 1 MiB produce request some 60 times.
    const size = this.firstSize();
    if (size >= 0 && size <= this.maxFrameBytes && this.pendingBytes - 4 < size) {
      return frames;
    }
    let data = this.pending.length === 1 ? chunk : Buffer.concat(this.pending, this.pendingBytes);
    let offset = 0;
    while (data.length - offset >= 4) {
      const size = data.readInt32BE(offset);
      if (size < 0 || size > this.maxFrameBytes) {
        throw new FrameTooLargeError(`frame of ${size} bytes exceeds limit ${this.maxFrameBytes}`);
      }
      if (data.length - offset - 4 < size) {
        break;
      }
      frames.push(data.subarray(offset + 4, offset + 4 + size));
      offset += 4 + size;
    }
    data = data.subarray(offset);
    this.pending = data.length > 0 ? [data] : [];
    this.pendingBytes = data.length;
    return frames;
  }

  /** The size prefix of the first pending frame (at least 4 bytes are pending). */
  private firstSize(): number {
    const head = this.pending[0] as Buffer;
    if (head.length >= 4) {
      return head.readInt32BE(0);
    }
    const prefix = Buffer.alloc(4);
    let filled = 0;
    for (const part of this.pending) {
      filled += part.copy(prefix, filled, 0, Math.min(part.length, 4 - filled));
      if (filled === 4) {
        break;
      }
    }
    return prefix.readInt32BE(0);
  }
}
