// A gateway in its own process, as it runs in production: its own heap and event loop, its own
// consumers, Redis and Kafka connections (the gateway owns no Postgres schema), its metrics (logging at fatal, as the baseline has
// none). It shares the parent's database, Redis prefix and
// dev broker, and calls the parent's services on a cache miss; everything comes from the
// environment. Prints "ready <port>" once it listens.
import type { AddressInfo } from "node:net";
import { constants, PerformanceObserver } from "node:perf_hooks";
import { Bus } from "@th/bus";
import { kafkaConnection } from "@th/config";
import { buildApp } from "@th/gateway/app";
import { readConfig } from "@th/gateway/config";
import { tuneHeapForRequests } from "@th/gateway/heap";
import { createMetrics, observeHttpRequests } from "@th/service-kit";
import { createLogger } from "@th/telemetry";
import { Redis } from "ioredis";
import { openLoopLateness } from "./loop-lateness.ts";

const config = readConfig(process.env);
tuneHeapForRequests();
const logger = createLogger({ service: "gateway-child", level: "fatal" });
const redis = new Redis(config.REDIS_URL, { keyPrefix: process.env.REDIS_PREFIX ?? "" });
// The consumers poll with the service runner's timings, not the tests' short ones.
const bus = new Bus({
  ...kafkaConnection(config),
  clientId: `gateway-child-${process.pid}`,
  logger,
});
const metrics = createMetrics("gateway");
const app = await buildApp({ config, logger, redis, bus, metrics });
const http = app.http;
if (!http) {
  throw new Error("the gateway has no HTTP app");
}
// The request histogram the service runner adds in production.
observeHttpRequests(http, metrics);
// A request's time inside this process, so a bench can tell it from the time the client saw;
// kept in a fixed array, so measuring allocates nothing per request.
const inside = new Float64Array(1_000_000);
let insideCount = 0;
http.addHook("onResponse", async (_request, reply) => {
  if (insideCount < inside.length) {
    inside[insideCount++] = reply.elapsedTime;
  }
});
await app.start();
await http.listen({ port: 0, host: "127.0.0.1" });
process.stdout.write(`ready ${(http.server.address() as AddressInfo).port}\n`);
// SIGUSR2 prints how late the event loop ran since the last one ("loop <p99 ms> <max ms>") and
// the requests' time inside the process ("inside <p50 ms> <p99 ms>"), and starts counting
// afresh, so a bench can tell the gateway's own stalls from the rest of the path.
// With it, "gc <young> <other> <total ms> <longest ms>": the collections in the same span, whose
// pauses are the loop's stalls that are not the path's own work.
const loop = openLoopLateness();
const gc = { young: 0, other: 0, totalMs: 0, longestMs: 0 };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = (entry.detail as { kind?: number } | undefined)?.kind;
    if (kind === constants.NODE_PERFORMANCE_GC_MINOR) {
      gc.young += 1;
    } else {
      gc.other += 1;
    }
    gc.totalMs += entry.duration;
    gc.longestMs = Math.max(gc.longestMs, entry.duration);
  }
}).observe({ entryTypes: ["gc"] });
function insideQuantile(q: number): string {
  const sorted = inside.slice(0, insideCount).sort();
  return (sorted[Math.floor(sorted.length * q)] ?? 0).toFixed(2);
}
process.on("SIGUSR2", () => {
  process.stdout.write(
    `loop ${loop.p99().toFixed(1)} ${loop.max().toFixed(1)}\n` +
      `inside ${insideQuantile(0.5)} ${insideQuantile(0.99)}\n` +
      `gc ${gc.young} ${gc.other} ${gc.totalMs.toFixed(1)} ${gc.longestMs.toFixed(1)}\n`,
  );
  loop.reset();
  insideCount = 0;
  Object.assign(gc, { young: 0, other: 0, totalMs: 0, longestMs: 0 });
});
process.on("SIGTERM", async () => {
  await http.close();
  await app.stop();
  await bus.close();
  redis.disconnect();
  process.exit(0);
});
