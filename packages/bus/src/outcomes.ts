/** What a handler decided about one record. */
export type Outcome =
  | { readonly kind: "done" }
  /** Leave the record where it is and offer it again later; the partition pauses meanwhile. */
  | { readonly kind: "retry"; readonly afterMs: number; readonly reason: string }
  /** The record can never succeed: move it to `<topic>.parked` with the reason and go on. */
  | { readonly kind: "park"; readonly reason: string };

// Typed narrowly so batch handlers (which answer done or park only) can use them too.
export const done: { readonly kind: "done" } = { kind: "done" };

export function retryLater(afterMs: number, reason: string): Outcome {
  return { kind: "retry", afterMs, reason };
}

export function park(reason: string): { readonly kind: "park"; readonly reason: string } {
  return { kind: "park", reason };
}

/** Thrown errors are retried with this back-off before the record is parked. */
export function backoffMs(attempt: number, baseMs = 200, capMs = 30_000): number {
  return Math.min(capMs, baseMs * 2 ** Math.max(0, attempt - 1));
}

/**
 * What a batch handler decided about one record of its batch. A batch is retried as a whole by
 * throwing, so there is no per-record `retry`.
 */
export type BatchOutcome = Extract<Outcome, { readonly kind: "done" | "park" }>;
