// Open-loop load at a steady rate, for latency at a given throughput: request i is due at
// start + i / rate whatever happened to the requests before it, and its latency counts from when
// it was due, so a stall shows in every request it holds up (no coordinated omission).
// autocannon's --overallRate cannot stand in for this: each connection sends its share of a
// second back to back and then waits for the next second, so its latencies are those of a
// saturated server for the first part of every second.
// The first two seconds are a warm-up (connections open, code is compiled): it is left out of the
// figures, and the measured schedule starts once every warm-up request has answered, so a queue
// built while the servers warmed up does not spill into the measurement.
// Run: node bench/paced-load.ts <url> <requests per second> <seconds> [headers as JSON]
// Prints one JSON line: {rate, sent, completed, errors, non2xx, p50, p99, p999, max} (ms).
import { Agent, request } from "node:http";

const [url, rateText, secondsText, headersText] = process.argv.slice(2);
if (!url || !rateText || !secondsText) {
  throw new Error("usage: paced-load.ts <url> <rate> <seconds> [headers JSON]");
}
const rate = Number(rateText);
const warmup = Math.round(rate * 2);
const total = warmup + Math.round(rate * Number(secondsText));
const headers = JSON.parse(headersText ?? "{}") as Record<string, string>;
// A keep-alive pool large enough that requests in flight (rate x latency, by Little's law) never
// wait for a socket: a small pool would add its own queue to the latencies. The sockets open
// during the warm-up, so connection set-up is not measured. A request that waits for a socket
// counts the wait.
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

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

/** A request that has not finished after this long counts as an error, so a run always ends. */
const TIMEOUT_MS = 10_000;

function send(index: number): void {
  const due = dueAt(index);
  let settled = false;
  const fail = () => {
    if (!settled) {
      settled = true;
      latencies[index] = Number.NaN;
      errors++;
      settle();
    }
  };
  const outgoing = request(url as string, { agent, headers, timeout: TIMEOUT_MS }, (response) => {
    response.resume();
    response.on("error", fail);
    response.on("end", () => {
      if (settled) {
        return;
      }
      settled = true;
      latencies[index] = performance.now() - due;
      const status = response.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        non2xx++;
      }
      settle();
    });
  });
  outgoing.on("timeout", () => outgoing.destroy(new Error("timed out")));
  outgoing.on("error", fail);
  outgoing.end();
}

function settle(): void {
  completed++;
  if (completed === warmup) {
    measuredStartsAt = performance.now() + 10;
    setTimeout(tick, 10);
  }
  if (completed === total) {
    report();
  }
}

function tick(): void {
  const now = performance.now();
  while (sent < total && dueAt(sent) <= now) {
    send(sent);
    sent++;
  }
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
  agent.destroy();
}

setTimeout(tick, Math.max(0, startsAt - performance.now()));
