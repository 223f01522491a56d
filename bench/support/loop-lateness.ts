import { monitorEventLoopDelay } from "node:perf_hooks";

const RESOLUTION_MS = 5;

/**
 * How late the event loop's turns run, in ms. Node's delay histogram records each whole interval
 * between its timer's runs, so an idle loop reads as its resolution (5 ms); that is taken off
 * here, leaving the time the loop was held up.
 */
export function openLoopLateness() {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  const lateMs = (nanoseconds: number) => Math.max(0, nanoseconds / 1e6 - RESOLUTION_MS);
  return {
    p99: () => lateMs(histogram.percentile(99)),
    max: () => lateMs(histogram.max),
    reset: () => histogram.reset(),
    stop: () => histogram.disable(),
  };
}
