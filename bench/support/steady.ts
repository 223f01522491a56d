// The steady part of a round: the rate between the moments 10 % and 90 % of its work was done.
// A finite backlog has a start (the first fetch after the consumers resume answers with what
// arrived first) and a tail (the last partition) that a stream of work never has; the figure
// between them is the rate an operator sizes for. Rounds print both.

export interface SteadyRate {
  completed: number;
  seconds: number;
}

/** Watches a counter go from `from` to `to` and answers the rate over its middle 80 %. */
export function steadyWindow(
  from: bigint,
  to: bigint,
): { observe(done: bigint, nowMs: number): void; result(): SteadyRate | undefined } {
  const span = to - from;
  const low = from + span / 10n;
  const high = from + (span * 9n) / 10n;
  let start: { done: bigint; atMs: number } | undefined;
  let end: { done: bigint; atMs: number } | undefined;
  return {
    observe(done, nowMs) {
      if (start === undefined && done >= low) {
        start = { done, atMs: nowMs };
      }
      if (start !== undefined && end === undefined && done >= high && nowMs > start.atMs) {
        end = { done, atMs: nowMs };
      }
    },
    result() {
      if (start === undefined || end === undefined) {
        return undefined;
      }
      return { completed: Number(end.done - start.done), seconds: (end.atMs - start.atMs) / 1000 };
    },
  };
}
