// Big-endian reader for Kafka request bodies. Every read is bounds-checked so a malformed request
// surfaces as a ProtocolDecodeError instead of reading garbage.

class ProtocolDecodeError extends Error {}

export class Reader {
  readonly buf: Buffer;
  offset: number;

  constructor(buf: Buffer, offset = 0) {
    this.buf = buf;
    this.offset = offset;
  }

  get remaining(): number {
    return this.buf.length - this.offset;
  }

  private need(bytes: number): void {
    if (this.offset + bytes > this.buf.length) {
      throw new ProtocolDecodeError(
        `need ${bytes} bytes at offset ${this.offset}, only ${this.remaining} left`,
      );
    }
  }

  int8(): number {
    this.need(1);
    const v = this.buf.readInt8(this.offset);
    this.offset += 1;
    return v;
  }

  boolean(): boolean {
    return this.int8() !== 0;
  }

  int16(): number {
    this.need(2);
    const v = this.buf.readInt16BE(this.offset);
    this.offset += 2;
    return v;
  }

  int32(): number {
    this.need(4);
    const v = this.buf.readInt32BE(this.offset);
    this.offset += 4;
    return v;
  }

  int64(): bigint {
    this.need(8);
    const v = this.buf.readBigInt64BE(this.offset);
    this.offset += 8;
    return v;
  }

  /** Offsets, timestamps and producer ids stay far below 2^53 in practice. */
  int64Number(): number {
    return Number(this.int64());
  }

  nullableString(): string | null {
    const length = this.int16();
    if (length < 0) {
      return null;
    }
    this.need(length);
    const v = this.buf.toString("utf8", this.offset, this.offset + length);
    this.offset += length;
    return v;
  }

  string(): string {
    return this.nullableString() ?? "";
  }

  nullableBytes(): Buffer | null {
    const length = this.int32();
    if (length < 0) {
      return null;
    }
    this.need(length);
    const v = this.buf.subarray(this.offset, this.offset + length);
    this.offset += length;
    return v;
  }

  bytes(): Buffer {
    return this.nullableBytes() ?? Buffer.alloc(0);
  }

  nullableArray<T>(readItem: (reader: Reader) => T): T[] | null {
    const count = this.int32();
    if (count < 0) {
      return null;
    }
    if (count > this.remaining) {
      throw new ProtocolDecodeError(`array count ${count} exceeds remaining bytes`);
    }
    const items: T[] = [];
    for (let i = 0; i < count; i++) {
      items.push(readItem(this));
    }
    return items;
  }

  array<T>(readItem: (reader: Reader) => T): T[] {
    return this.nullableArray(readItem) ?? [];
  }

  /** Flexible versions' unsigned base-128 varint (no zigzag), at most 32 bits. */
  unsignedVarint(): number {
    let value = 0;
    for (let shift = 0; shift <= 28; shift += 7) {
      const byte = this.int8() & 0xff;
      if (shift === 28 && byte > 0x0f) {
        throw new ProtocolDecodeError("unsigned varint longer than 32 bits");
      }
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) {
        return value;
      }
    }
    throw new ProtocolDecodeError("unsigned varint longer than 32 bits");
  }

  /** COMPACT_STRING: the length plus one as an unsigned varint (0 is null), then UTF-8 bytes. */
  compactNullableString(): string | null {
    const lengthPlusOne = this.unsignedVarint();
    if (lengthPlusOne === 0) {
      return null;
    }
    const length = lengthPlusOne - 1;
    this.need(length);
    const v = this.buf.toString("utf8", this.offset, this.offset + length);
    this.offset += length;
    return v;
  }

  compactString(): string {
    return this.compactNullableString() ?? "";
  }

  /** A tagged-field section: skipped whole, since no field read here is tagged. */
  skipTaggedFields(): void {
    const count = this.unsignedVarint();
    for (let i = 0; i < count; i++) {
      this.unsignedVarint(); // tag
      const size = this.unsignedVarint();
      this.need(size);
      this.offset += size;
    }
  }
}
