import { ByteChunks } from "./byte-chunks.ts";

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
 * Rows in PostgreSQL's binary COPY format, written field by field into chunks off the JavaScript
 * heap. Nothing is escaped and nothing is parsed back: a value goes
 * in as its length and bytes (bytea as itself, not as hex), which is most of what a text COPY
 * cost the server. Each value must be of its column's exact type (`int16` for smallint, `int64`
 * for bigint, ...): the server reads the bytes by the column's type.
 *
 * Send the rows with `copyChunks(client, "COPY t (...) FROM STDIN (FORMAT binary)",
 * binaryCopyStream(rows.take(true)))`.
 */
export class CopyBinary extends ByteChunks {
  #rows = 0;

  /** How many rows were begun. */
  get rows(): number {
    return this.#rows;
  }

  /** Begins a row of `fields` values; write exactly that many next. */
  row(fields: number): this {
    this.#rows += 1;
    this.room(2);
    this.used = this.chunk.writeInt16BE(fields, this.used);
    return this;
  }

  null(): this {
    this.room(4);
    this.used = this.chunk.writeInt32BE(-1, this.used);
    return this;
  }

  text(value: string | null): this {
    if (value === null) {
      return this.null();
    }
    // A UTF-16 unit is at most three UTF-8 bytes.
    this.room(4 + value.length * 3);
    const length = this.chunk.write(value, this.used + 4);
    this.chunk.writeInt32BE(length, this.used);
    this.used += 4 + length;
    return this;
  }

  bytes(value: Uint8Array | null): this {
    if (value === null) {
      return this.null();
    }
    const at = this.#field(value.length);
    this.chunk.set(value, at);
    this.used += value.length;
    return this;
  }

  bool(value: boolean | null): this {
    if (value === null) {
      return this.null();
    }
    const at = this.#field(1);
    this.used = this.chunk.writeUInt8(value ? 1 : 0, at);
    return this;
  }

  /** A smallint. */
  int16(value: number | null): this {
    if (value === null) {
      return this.null();
    }
    const at = this.#field(2);
    this.used = this.chunk.writeInt16BE(value, at);
    return this;
  }

  /** An integer. */
  int32(value: number | null): this {
    if (value === null) {
      return this.null();
    }
    const at = this.#field(4);
    this.used = this.chunk.writeInt32BE(value, at);
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
    const at = this.#field(8);
    this.used = this.chunk.writeInt32BE(Math.floor(value / TWO_TO_THE_32), at);
    this.used = this.chunk.writeUInt32BE(value >>> 0, this.used);
    return this;
  }

  /** A one-dimensional text[] without nulls (none at all: no dimension). */
  textArray(values: readonly string[]): this {
    const dimensions = values.length === 0 ? 0 : 1;
    let size = 12 + dimensions * 8;
    for (const value of values) {
      size += 4 + Buffer.byteLength(value);
    }
    const at = this.#field(size);
    this.used = this.chunk.writeInt32BE(dimensions, at);
    this.used = this.chunk.writeInt32BE(0, this.used);
    this.used = this.chunk.writeInt32BE(TEXT_OID, this.used);
    if (dimensions === 1) {
      this.used = this.chunk.writeInt32BE(values.length, this.used);
      this.used = this.chunk.writeInt32BE(1, this.used);
    }
    for (const value of values) {
      const length = this.chunk.write(value, this.used + 4);
      this.chunk.writeInt32BE(length, this.used);
      this.used += 4 + length;
    }
    return this;
  }

  /**
   * Makes room for a value of `size` bytes and writes its length; returns where the value goes.
   * Call it before reading `this.chunk`: making room may begin a new chunk.
   */
  #field(size: number): number {
    this.room(4 + size);
    this.used = this.chunk.writeInt32BE(size, this.used);
    return this.used;
  }
}

/** The chunks of rows as one binary COPY stream: header, rows, trailer. */
export function binaryCopyStream(chunks: readonly Buffer[]): Buffer[] {
  return [HEADER, ...chunks, TRAILER];
}
