/** Bytes gathered before a chunk is sealed and a new one started. */
const CHUNK_BYTES = 1 << 20;

/** The signature, flags and header extension length that open every binary COPY stream. */
const HEADER = Buffer.from([
  ...Buffer.from("PGCOPY\n\xff\r\n\0", "latin1"),
  ...[0, 0, 0, 0],
  ...[0, 0, 0, 0],
]);

/** A field count of -1 ends the stream. */
const TRAILER = Buffer.from([0xff, 0xff]);

const TWO_TO_THE_32 = 2 ** 32;

/** The type oid of `text`, as a text[] value names its elements. */
const TEXT_OID = 25;

/**
 * Rows in PostgreSQL's binary COPY format, written field by field into chunks of about a
 * megabyte off the JavaScript heap. Nothing is escaped and nothing is parsed back: a value goes
 * in as its length and bytes (bytea as itself, not as hex), which is most of what a text COPY
 * cost the server. Each value must be of its column's exact type (`int16` for smallint, `int64`
 * for bigint, ...): the server reads the bytes by the column's type.
 *
 * Send the rows with `copyChunks(client, "COPY t (...) FROM STDIN (FORMAT binary)",
 * binaryCopyStream(rows.take(true)))`.
 */
export class CopyBinary {
  readonly #full: Buffer[] = [];
  #chunk: Buffer = Buffer.allocUnsafe(0);
  #used = 0;
  #rows = 0;

  /** How many rows were begun. */
  get rows(): number {
    return this.#rows;
  }

  /** Begins a row of `fields` values; write exactly that many next. */
  row(fields: number): this {
    this.#rows += 1;
    this.#room(2);
    this.#used = this.#chunk.writeInt16BE(fields, this.#used);
    return this;
  }

  null(): this {
    this.#room(4);
    this.#used = this.#chunk.writeInt32BE(-1, this.#used);
    return this;
  }

  text(value: string | null): this {
    if (value === null) {
      return this.null();
    }
    // A UTF-16 unit is at most three UTF-8 bytes.
    this.#room(4 + value.length * 3);
    const length = this.#chunk.write(value, this.#used + 4);
    this.#chunk.writeInt32BE(length, this.#used);
    this.#used += 4 + length;
    return this;
  }

  bytes(value: Uint8Array | null): this {
    if (value === null) {
      return this.null();
    }
    this.#room(4 + value.length);
    this.#used = this.#chunk.writeInt32BE(value.length, this.#used);
    this.#chunk.set(value, this.#used);
    this.#used += value.length;
    return this;
  }

  bool(value: boolean | null): this {
    if (value === null) {
      return this.null();
    }
    this.#room(5);
    this.#used = this.#chunk.writeInt32BE(1, this.#used);
    this.#chunk[this.#used] = value ? 1 : 0;
    this.#used += 1;
    return this;
  }

  /** A smallint. */
  int16(value: number | null): this {
    if (value === null) {
      return this.null();
    }
    this.#room(6);
    this.#used = this.#chunk.writeInt32BE(2, this.#used);
    this.#used = this.#chunk.writeInt16BE(value, this.#used);
    return this;
  }

  /** An integer. */
  int32(value: number | null): this {
    if (value === null) {
      return this.null();
    }
    this.#room(8);
    this.#used = this.#chunk.writeInt32BE(4, this.#used);
    this.#used = this.#chunk.writeInt32BE(value, this.#used);
    return this;
  }

  /** A bigint, from a safe integer: its high word, then its low word. */
  int64(value: number | null): this {
    if (value === null) {
      return this.null();
    }
    if (!Number.isSafeInteger(value)) {
      throw new RangeError(`${value} is not a safe integer`);
    }
    this.#room(12);
    this.#used = this.#chunk.writeInt32BE(8, this.#used);
    this.#used = this.#chunk.writeInt32BE(Math.floor(value / TWO_TO_THE_32), this.#used);
    this.#used = this.#chunk.writeUInt32BE(value >>> 0, this.#used);
    return this;
  }

  /** A one-dimensional text[] without nulls. */
  textArray(values: readonly string[]): this {
    const lengthAt = this.#reserveLength();
    const start = this.#used;
    const dimensions = values.length === 0 ? 0 : 1;
    this.#room(12 + dimensions * 8);
    this.#used = this.#chunk.writeInt32BE(dimensions, this.#used);
    this.#used = this.#chunk.writeInt32BE(0, this.#used);
    this.#used = this.#chunk.writeInt32BE(TEXT_OID, this.#used);
    if (dimensions === 1) {
      this.#used = this.#chunk.writeInt32BE(values.length, this.#used);
      this.#used = this.#chunk.writeInt32BE(1, this.#used);
    }
    for (const value of values) {
      this.#room(4 + value.length * 3);
      const length = this.#chunk.write(value, this.#used + 4);
      this.#chunk.writeInt32BE(length, this.#used);
      this.#used += 4 + length;
    }
    lengthAt.chunk.writeInt32BE(this.#written(lengthAt, start), lengthAt.at);
    return this;
  }

  /** The chunks filled so far, each handed out once; with `all`, the one being filled too. */
  take(all: boolean): Buffer[] {
    if (all) {
      this.#seal();
    }
    return this.#full.splice(0);
  }

  /** Makes room for `bytes` more in the current chunk, sealing it for a new one if need be. */
  #room(bytes: number): void {
    if (this.#used + bytes > this.#chunk.length) {
      this.#seal();
      this.#chunk = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, bytes));
    }
  }

  #seal(): void {
    if (this.#used > 0) {
      this.#full.push(this.#chunk.subarray(0, this.#used));
    }
    this.#chunk = Buffer.allocUnsafe(0);
    this.#used = 0;
  }

  /** Room for a length written once its value is (an array's); where it goes. */
  #reserveLength(): { chunk: Buffer; at: number; sealedBefore: number } {
    this.#room(4);
    const reserved = { chunk: this.#chunk, at: this.#used, sealedBefore: this.#full.length };
    this.#used += 4;
    return reserved;
  }

  /** Bytes written since `start` of the chunk the length was reserved in, across any seals. */
  #written(reserved: { chunk: Buffer; sealedBefore: number }, start: number): number {
    if (this.#chunk === reserved.chunk) {
      return this.#used - start;
    }
    let total = (this.#full[reserved.sealedBefore]?.length ?? 0) - start;
    for (let index = reserved.sealedBefore + 1; index < this.#full.length; index++) {
      total += this.#full[index]?.length ?? 0;
    }
    return total + this.#used;
  }
}

/** The chunks of rows as one binary COPY stream: header, rows, trailer. */
export function binaryCopyStream(chunks: readonly Buffer[]): Buffer[] {
  return [HEADER, ...chunks, TRAILER];
}
