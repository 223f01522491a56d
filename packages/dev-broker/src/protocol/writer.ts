// Growable big-endian writer for response bodies. Large record blobs are appended by reference and
// copied once when the frame is assembled.

export class Writer {
  private chunks: Buffer[] = [];
  private scratch: Buffer;
  private position = 0;
  private total = 0;

  constructor(initialSize = 256) {
    this.scratch = Buffer.allocUnsafe(initialSize);
  }

  get length(): number {
    return this.total + this.position;
  }

  private ensure(bytes: number): void {
    if (this.position + bytes <= this.scratch.length) {
      return;
    }
    this.flushScratch();
    this.scratch = Buffer.allocUnsafe(Math.max(bytes, this.scratch.length * 2, 256));
  }

  private flushScratch(): void {
    if (this.position > 0) {
      this.chunks.push(this.scratch.subarray(0, this.position));
      this.total += this.position;
      this.scratch = this.scratch.subarray(this.position);
      this.position = 0;
    }
  }

  int8(value: number): this {
    this.ensure(1);
    this.scratch.writeInt8(value, this.position);
    this.position += 1;
    return this;
  }

  boolean(value: boolean): this {
    return this.int8(value ? 1 : 0);
  }

  int16(value: number): this {
    this.ensure(2);
    this.scratch.writeInt16BE(value, this.position);
    this.position += 2;
    return this;
  }

  int32(value: number): this {
    this.ensure(4);
    this.scratch.writeInt32BE(value, this.position);
    this.position += 4;
    return this;
  }

  uint32(value: number): this {
    this.ensure(4);
    this.scratch.writeUInt32BE(value, this.position);
    this.position += 4;
    return this;
  }

  int64(value: bigint | number): this {
    this.ensure(8);
    this.scratch.writeBigInt64BE(typeof value === "bigint" ? value : BigInt(value), this.position);
    this.position += 8;
    return this;
  }

  nullableString(value: string | null): this {
    if (value === null) {
      return this.int16(-1);
    }
    const length = Buffer.byteLength(value, "utf8");
    this.int16(length);
    this.ensure(length);
    this.scratch.write(value, this.position, length, "utf8");
    this.position += length;
    return this;
  }

  string(value: string): this {
    return this.nullableString(value);
  }

  raw(value: Buffer): this {
    if (value.length <= 64) {
      this.ensure(value.length);
      value.copy(this.scratch, this.position);
      this.position += value.length;
      return this;
    }
    this.flushScratch();
    this.chunks.push(value);
    this.total += value.length;
    return this;
  }

  nullableBytes(value: Buffer | null): this {
    if (value === null) {
      return this.int32(-1);
    }
    this.int32(value.length);
    return this.raw(value);
  }

  bytes(value: Buffer): this {
    return this.nullableBytes(value);
  }

  array<T>(items: readonly T[], writeItem: (writer: this, item: T) => void): this {
    this.int32(items.length);
    for (const item of items) {
      writeItem(this, item);
    }
    return this;
  }

  nullableArray<T>(items: readonly T[] | null, writeItem: (writer: this, item: T) => void): this {
    if (items === null) {
      return this.int32(-1);
    }
    return this.array(items, writeItem);
  }

  /** Flexible versions' unsigned base-128 varint (no zigzag). */
  unsignedVarint(value: number): this {
    let remaining = value >>> 0;
    this.ensure(5);
    while (remaining > 0x7f) {
      this.scratch[this.position++] = (remaining & 0x7f) | 0x80;
      remaining >>>= 7;
    }
    this.scratch[this.position++] = remaining;
    return this;
  }

  /** COMPACT_ARRAY: the count plus one as an unsigned varint, then the items. */
  compactArray<T>(items: readonly T[], writeItem: (writer: this, item: T) => void): this {
    this.unsignedVarint(items.length + 1);
    for (const item of items) {
      writeItem(this, item);
    }
    return this;
  }

  /** An empty tagged-field section (every tagged field at its default is left out). */
  noTaggedFields(): this {
    return this.unsignedVarint(0);
  }

  toBuffer(): Buffer {
    this.flushScratch();
    if (this.chunks.length === 1) {
      return this.chunks[0] as Buffer;
    }
    return Buffer.concat(this.chunks, this.total);
  }
}
