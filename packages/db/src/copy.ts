import { once } from "node:events";
import type { PoolClient } from "pg";
import { type CopyStreamQuery, from as copyFrom } from "pg-copy-streams";
import { ByteChunks } from "./byte-chunks.ts";

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

/**
 * COPY text gathered as bytes, line by line: rows rendered as soon as they exist are held off
 * the JavaScript heap until they are sent (`copyChunks`).
 */
class CopyText extends ByteChunks {
  /** Appends one line, which ends in a line break. Answers whether a chunk filled up. */
  add(line: string): boolean {
    // A UTF-16 unit is at most three UTF-8 bytes.
    const filled = this.room(line.length * 3);
    this.used += this.chunk.write(line, this.used);
    return filled;
  }
}

/**
 * Starts a `COPY ... FROM STDIN` on the client and answers its writable stream, for a caller that
 * feeds one COPY over a long time (it finishes on `end`); `highWaterMark` is what the stream
 * buffers before `write` answers false.
 */
export function copyFromStdin(
  client: PoolClient,
  sql: string,
  options: { highWaterMark?: number } = {},
): CopyStreamQuery {
  return client.query(copyFrom(sql, options));
}

/**
 * Runs a `COPY ... FROM STDIN` on the client with its data already rendered as byte chunks
 * (`CopyBinary`), or produced while the COPY runs (an async iterable).
 */
export async function copyChunks(
  client: PoolClient,
  sql: string,
  chunks: Iterable<Buffer> | AsyncIterable<Buffer>,
): Promise<void> {
  const stream = copyFromStdin(client, sql);
  const done = new Promise<void>((resolve, reject) => {
    stream.once("finish", resolve);
    stream.once("error", reject);
  });
  done.catch(() => {});
  for await (const chunk of chunks) {
    // The stream keeps a written chunk until the socket has taken it: chunks are never reused.
    if (!stream.write(chunk)) {
      await Promise.race([once(stream, "drain"), done]);
    }
  }
  stream.end();
  await done;
}

/**
 * Runs a `COPY ... FROM STDIN` on the client with the given lines (each ending in a line
 * break). Lines are encoded straight into byte chunks, sent as each fills: joining them into one
 * large string first made the garbage collector copy it over and over, and the socket encode it
 * once more.
 */
export async function copyLines(
  client: PoolClient,
  sql: string,
  lines: Iterable<string>,
): Promise<void> {
  async function* chunks(): AsyncGenerator<Buffer> {
    const text = new CopyText();
    for (const line of lines) {
      if (text.add(line)) {
        yield* text.take(false);
      }
    }
    yield* text.take(true);
  }
  await copyChunks(client, sql, chunks());
}
