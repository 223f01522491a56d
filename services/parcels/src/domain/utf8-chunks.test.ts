import { StringDecoder } from "node:string_decoder";
import { seededRandom } from "@th/contracts/samples";
import { describe, expect, it } from "vitest";
import { Utf8Chunks } from "./utf8-chunks.ts";

/** The text of `bytes` read in chunks cut at `cuts`. */
function readInChunks(bytes: Buffer, cuts: readonly number[]): string {
  const chunks = new Utf8Chunks();
  let text = "";
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    text += chunks.text(bytes.subarray(from, cut));
    from = cut;
  }
  return text + chunks.end();
}

/** The same chunks through a UTF-8 decoder alone, as a stream read with an encoding decodes. */
function decodeInChunks(bytes: Buffer, cuts: readonly number[]): string {
  const decoder = new StringDecoder("utf8");
  let text = "";
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    text += decoder.write(bytes.subarray(from, cut));
    from = cut;
  }
  return text + decoder.end();
}

describe("a roll file's chunks as text", () => {
  it("reads a character cut between two chunks whole, ASCII chunks after it included", () => {
    const bytes = Buffer.from("SMITH,JOSÉ,MIAMI\nDOE,JOHN,TAMPA\n", "utf8");
    const inside = bytes.indexOf(0xc3) + 1;
    expect(readInChunks(bytes, [inside, inside + 4])).toBe("SMITH,JOSÉ,MIAMI\nDOE,JOHN,TAMPA\n");
  });

  it("gives U+FFFD for a character the next chunk does not finish, as the decoder does", () => {
    const bytes = Buffer.concat([Buffer.from("AB"), Buffer.from([0xe2, 0x82]), Buffer.from("CD")]);
    expect(readInChunks(bytes, [4])).toBe(decodeInChunks(bytes, [4]));
    expect(readInChunks(bytes, [4])).toContain("\uFFFD");
    const cutShort = bytes.subarray(0, 4);
    expect(readInChunks(cutShort, [2])).toBe(decodeInChunks(cutShort, [2]));
  });

  it("gives the decoder's text for any bytes cut anywhere", () => {
    const random = seededRandom(7);
    const pieces = ["A", "Z", ",", "\n", "é", "€", "😀"];
    for (let round = 0; round < 200; round++) {
      const parts: Buffer[] = [];
      for (let i = 0; i < 40; i++) {
        parts.push(
          random() < 0.05
            ? Buffer.from([0x80 + Math.floor(random() * 0x80)])
            : Buffer.from(pieces[Math.floor(random() * pieces.length)] as string),
        );
      }
      const bytes = Buffer.concat(parts);
      const cuts = Array.from({ length: 6 }, () => Math.floor(random() * bytes.length)).sort(
        (a, b) => a - b,
      );
      expect(readInChunks(bytes, cuts)).toBe(decodeInChunks(bytes, cuts));
    }
  });
});
