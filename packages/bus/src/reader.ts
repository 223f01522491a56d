/** Reads big-endian fields and varints from one buffer. */
export class Reader {
  buffer: Buffer;
  pos: number;

  constructor(buffer: Buffer, pos = 0) {
    this.buffer = buffer;
    this.pos = pos;
  }

  int8() {
    const value = this.buffer.readInt8(this.pos);
    this.pos += 1;
    return value;
  }
  int16() {
    const value = this.buffer.readInt16BE(this.pos);
    this.pos += 2;
    return value;
  }
  int32() {
    const value = this.buffer.readInt32BE(this.pos);
    this.pos += 4;
    return value;
  }
  int64() {
    const value = this.buffer.readBigInt64BE(this.pos);
    this.pos += 8;
    return value;
  }
  string() {
    const length = this.int16();
    const value = this.buffer.toString("utf8", this.pos, this.pos + length);
    this.pos += length;
    return value;
  }
  /** Zig-zag varint; record fields never exceed 2^31 here (varlong timestamps are skipped). */
  varint() {
    let result = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = this.buffer[this.pos++] as number;
      result += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80);
    return result % 2 === 0 ? result / 2 : -(result + 1) / 2;
  }
  skipVarint() {
    while ((this.buffer[this.pos++] as number) & 0x80) {}
  }
}
