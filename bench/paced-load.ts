// Open-loop load at a steady rate, for latency at a given throughput: request i is due at
// start + i / rate whatever happened to the requests before it, and its latency counts from when
// it was due, so a stall shows in every request it holds up (no coordinated omission).
// autocannon's --overallRate cannot stand in for this: each connection sends its share of a
// second back to back and then waits for the next second, so its latencies are those of a
// saturated server for the first part of every second.
// The client speaks HTTP/1.1 over plain keep-alive sockets: one prepared request, responses read
// only as far as the status line and Content-Length (an answer without one counts as an error).
// node:http's client cost about 50 µs of CPU per request, most of a core at the rates measured
// here, and on a two-core machine that CPU came out of the servers being measured. This one costs
// about 10 µs: answers are read on their bytes (no string or match per response) and one sweep
// times out every request; with a string, a match and a timer per request it cost about 12 µs
// and collected its young generation about a seventh more often. A request waits for a free
// socket when every socket is busy (the wait counts); the pool is sized so that this happens only
// while the server stalls.
// The first two seconds are a warm-up (connections open, code is compiled): it is left out of the
// figures, and the measured schedule starts once every warm-up request has answered, so a queue
// built while the servers warmed up does not spill into the measurement.
// Run: node bench/paced-load.ts <url> <requests per second> <seconds> [headers as JSON]
// [a file of variants as JSON: [{path, headers}], sent in turn instead of the URL's path]
// Prints one JSON line: {rate, sent, completed, errors, non2xx, p50, p99, p999, max} (ms).
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";

const [url, rateText, secondsText, headersText, variantsText] = process.argv.slice(2);
if (!url || !rateText || !secondsText) {
  throw new Error("usage: paced-load.ts <url> <rate> <seconds> [headers JSON] [variants file]");
}
const target = new URL(url);
const rate = Number(rateText);
const warmup = Math.round(rate * 2);
const total = warmup + Math.round(rate * Number(secondsText));
const headers = JSON.parse(headersText ?? "{}") as Record<string, string>;
/**
 * Requests are prepared once: the URL's with the headers given, or, with variants (a JSON list of
 * {path, headers}, in a file), one per variant, sent in turn (many tenants' keys and many folios, say).
 */
const variants = JSON.parse(
  variantsText === undefined
    ? JSON.stringify([{ path: `${target.pathname}${target.search}`, headers: {} }])
    : readFileSync(variantsText, "utf8"),
) as Array<{ path: string; headers: Record<string, string> }>;
const requests = variants.map(({ path, headers: own }) =>
  Buffer.from(
    `GET ${path} HTTP/1.1\r\nhost: ${target.host}\r\n${Object.entries({ ...headers, ...own })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("")}\r\n`,
  ),
);
const SOCKETS = 256;
/** A request that has not finished after this long counts as an error, so a run always ends. */
const TIMEOUT_MS = 10_000;
const HEADER_END = Buffer.from("\r\n\r\n");
const CONTENT_LENGTH = Buffer.from("\r\ncontent-length:");
const EMPTY = Buffer.alloc(0);

const latencies = new Float64Array(total);
let sent = 0;
let completed = 0;
let errors = 0;
let non2xx = 0;
const startsAt = performance.now() + 100;
let measuredStartsAt = Number.POSITIVE_INFINITY;

function dueAt(index: number): number {
  return index < warmup
    ? startsAt + (index * 1000) / rate
    : measuredStartsAt + ((index - warmup) * 1000) / rate;
}

/** One keep-alive connection carrying one request at a time. */
class Connection {
  readonly #socket: Socket;
  #index = -1;
  #sentAt = 0;
  #received: Buffer = EMPTY;

  constructor() {
    this.#socket = connect(Number(target.port || 80), target.hostname);
    this.#socket.setNoDelay(true);
    this.#socket.on("data", (data: Buffer) => this.#onData(data));
    this.#socket.on("error", () => this.#fail());
    this.#socket.on("close", () => this.#fail());
  }

  send(index: number): void {
    this.#index = index;
    this.#sentAt = performance.now();
    this.#received = EMPTY;
    this.#socket.write(requests[index % requests.length] as Buffer);
  }

  /** Ends a request that has waited past the timeout (see the sweep below). */
  expireIfOlderThan(sentBefore: number): void {
    if (this.#index >= 0 && this.#sentAt < sentBefore) {
      this.#socket.destroy();
    }
  }

  close(): void {
    this.#socket.removeAllListeners("close");
    this.#socket.destroy();
  }

  // The answer is read on its bytes: a string or a match per response would be garbage the
  // client collects while requests are due, and its pauses would count against both servers.
  #onData(data: Buffer): void {
    this.#received = this.#received.length === 0 ? data : Buffer.concat([this.#received, data]);
    const received = this.#received;
    const headerEnd = received.indexOf(HEADER_END);
    if (headerEnd < 0 || this.#index < 0) {
      return;
    }
    const length = contentLength(received, headerEnd);
    if (length < 0) {
      // A chunked answer would never be seen complete; it fails now instead of timing out.
      this.#socket.destroy();
      return;
    }
    if (received.length < headerEnd + 4 + length) {
      return;
    }
    // "HTTP/1.1 200": the status code's three digits start at byte 9.
    const status =
      ((received[9] as number) - 48) * 100 +
      ((received[10] as number) - 48) * 10 +
      ((received[11] as number) - 48);
    const index = this.#index;
    this.#index = -1;
    latencies[index] = performance.now() - dueAt(index);
    if (status < 200 || status >= 300) {
      non2xx++;
    }
    idle.push(this);
    settle();
  }

  #fail(): void {
    if (this.#index >= 0) {
      latencies[this.#index] = Number.NaN;
      this.#index = -1;
      errors++;
      settle();
    }
  }
}

/** The Content-Length of a response head ending at `headerEnd`, or -1 when it has none. */
function contentLength(received: Buffer, headerEnd: number): number {
  let at = received.indexOf(CONTENT_LENGTH);
  if (at < 0 || at > headerEnd) {
    // Servers here send the name in lower case; any other spelling takes the slow way.
    const match = /\r\ncontent-length: *(\d+)/i.exec(received.toString("latin1", 0, headerEnd));
    return match ? Number(match[1]) : -1;
  }
  at += CONTENT_LENGTH.length;
  while (received[at] === 32) {
    at++;
  }
  let length = -1;
  for (
    let digit = received[at] as number;
    digit >= 48 && digit <= 57;
    digit = received[++at] as number
  ) {
    length = (length < 0 ? 0 : length * 10) + digit - 48;
  }
  return length;
}

const idle: Connection[] = [];
const connections: Connection[] = [];
for (let count = 0; count < SOCKETS; count++) {
  const connection = new Connection();
  connections.push(connection);
  idle.push(connection);
}
// One sweep for every request's timeout instead of a timer armed and cleared per request.
const sweep = setInterval(() => {
  const sentBefore = performance.now() - TIMEOUT_MS;
  for (const connection of connections) {
    connection.expireIfOlderThan(sentBefore);
  }
}, 500);
/** Requests that were due while every socket was busy, oldest first. */
const waiting: number[] = [];

function dispatch(): void {
  while (waiting.length > 0) {
    const connection = idle.pop();
    if (!connection) {
      return;
    }
    connection.send(waiting.shift() as number);
  }
}

function settle(): void {
  completed++;
  if (completed === warmup) {
    measuredStartsAt = performance.now() + 10;
    setTimeout(tick, 10);
  }
  if (completed === total) {
    report();
    return;
  }
  dispatch();
}

function tick(): void {
  const now = performance.now();
  while (sent < total && dueAt(sent) <= now) {
    waiting.push(sent);
    sent++;
  }
  dispatch();
  // After the warm-up the schedule waits for its last answer (settle starts it again).
  if (sent < total && dueAt(sent) !== Number.POSITIVE_INFINITY) {
    setTimeout(tick, Math.max(0, Math.min(1, dueAt(sent) - performance.now())));
  }
}

function percentile(sorted: Float64Array, fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

function report(): void {
  const elapsed = (performance.now() - dueAt(warmup)) / 1000;
  // Failed requests are counted as errors, not as latencies.
  const sorted = latencies
    .slice(warmup)
    .filter((latency) => !Number.isNaN(latency))
    .sort();
  const round = (value: number) => Math.round(value * 100) / 100;
  process.stdout.write(
    `${JSON.stringify({
      rate: round((total - warmup) / elapsed),
      sent,
      completed,
      errors,
      non2xx,
      p50: round(percentile(sorted, 0.5)),
      p99: round(percentile(sorted, 0.99)),
      p999: round(percentile(sorted, 0.999)),
      max: round(sorted[sorted.length - 1] ?? Number.NaN),
    })}\n`,
  );
  clearInterval(sweep);
  for (const connection of connections) {
    connection.close();
  }
}

setTimeout(tick, Math.max(0, startsAt - performance.now()));
