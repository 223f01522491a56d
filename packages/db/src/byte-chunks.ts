/** Bytes gathered before a chunk is sealed and a new one started. */
export const CHUNK_BYTES = 1 << 20;

const EMPTY = Buffer.alloc(0);

/**
 * Bytes written in place into chunks of about a megabyte, off the JavaScript heap: what a COPY
 * sends, rendered as soon as its rows exist and held until they are sent. Subclasses write at
 * `used` into `chunk` after asking `room` for the bytes they need.
 */
export class ByteChunks {
  readonly #sealed: Buffer[] = [];
  protected chunk: Buffer = EMPTY;
  protected used = 0;

  /** The chunks filled so far, each handed out once; with `all`, the one being filled too. */
  take(all: boolean): Buffer[] {
    if (all) {
      this.#seal();
    }
    return this.#sealed.splice(0);
  }

  /**
   * Makes room for `bytes` more in the current chunk, sealing it for a new one when they do not
   * fit. Answers whether a chunk was sealed.
   */
  protected room(bytes: number): boolean {
    if (this.used + bytes <= this.chunk.length) {
      return false;
    }
    const sealed = this.#seal();
    this.chunk = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, bytes));
    return sealed;
  }

  #seal(): boolean {
    const sealed = this.used > 0;
    if (sealed) {
      this.#sealed.push(this.chunk.subarray(0, this.used));
    }
    this.chunk = EMPTY;
    this.used = 0;
    return sealed;
  }
}
