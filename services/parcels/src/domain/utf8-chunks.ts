import { isAscii } from "node:buffer";
import { StringDecoder } from "node:string_decoder";

/**
 * A UTF-8 file's chunks as text, the same text a UTF-8 decoder gives. A chunk of ASCII bytes
 * only is read as Latin-1, which for those bytes is the same text at about half the decoder's
 * CPU (roll files are ASCII but for a rare name). Any other chunk goes through the decoder, and
 * so does the chunk after it, which may end a character the decoder holds the start of.
 */
export class Utf8Chunks {
  readonly #decoder = new StringDecoder("utf8");
  /** Whether the decoder holds nothing: the last chunk it took was ASCII, or it took none. */
  #decoderEmpty = true;

  text(chunk: Buffer): string {
    const ascii = isAscii(chunk);
    if (ascii && this.#decoderEmpty) {
      return chunk.toString("latin1");
    }
    this.#decoderEmpty = ascii;
    return this.#decoder.write(chunk);
  }

  /** What the decoder still holds: a character the file cut short, as U+FFFD. */
  end(): string {
    return this.#decoder.end();
  }
}
