import { once } from "node:events";
import type { PoolClient } from "pg";
import { from as copyFrom } from "pg-copy-streams";

const NEEDS_ESCAPE = /[\\\t\n\r]/;

/** Whether text holds a character COPY text format escapes; one test can cover many values. */
export function needsCopyEscape(text: string): boolean {
  return NEEDS_ESCAPE.test(text);
}

/** A value in COPY text format: backslash, tab and line breaks escaped, null as \N. */
export function copyText(value: string | number | boolean | null): string {
  if (value === null) {
    return "\\N";
  }
  if (typeof value !== "string") {
    return String(value);
  }
  return NEEDS_ESCAPE.test(value)
    ? value
        .replaceAll("\\", "\\\\")
        .replaceAll("\t", "\\t")
        .replaceAll("\n", "\\n")
        .replaceAll("\r", "\\r")
    : value;
}

/** Bytes of COPY text gathered before a write to the connection. */
const CHUNK_BYTES = 1 << 20;

/**
 * Runs a `COPY ... FROM STDIN` on the client with the given lines (each ending in a line
 * break). Lines are encoded straight into byte chunks: joining them into one large string first
 * made the garbage collector copy it over and over, and the socket encode it once more.
 */
export async function copyLines(
  client: PoolClient,
  sql: string,
  lines: Iterable<string>,
): Promise<void> {
  const stream = client.query(copyFrom(sql));
  const done = new Promise<void>((resolve, reject) => {
    stream.once("finish", resolve);
    stream.once("error", reject);
  });
  done.catch(() => {});
  let chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  let used = 0;
  for (const line of lines) {
    // A UTF-16 unit is at most three UTF-8 bytes.
    if (used + line.length * 3 > chunk.length) {
      if (used > 0) {
        // The stream keeps a written chunk until the socket has taken it: the next is new.
        if (!stream.write(chunk.subarray(0, used))) {
          await Promise.race([once(stream, "drain"), done]);
        }
        used = 0;
      }
      chunk = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, line.length * 3));
    }
    used += chunk.write(line, used);
  }
  stream.end(chunk.subarray(0, used));
  await done;
}
