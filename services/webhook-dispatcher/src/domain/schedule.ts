import { deliveryRetryLadder, type FailureKind } from "@th/contracts";

export const MAX_ATTEMPTS = 5;
export const DEAD_LETTER_AFTER_MS = 30 * 60_000;
export const HOLD_MS = 30 * 86_400_000;

/**
 * What an attempt came to. A response keeps its status only: nothing of what a receiver (or
 * whatever answered at that address) sent back is kept or shown (decision 0331).
 */
export type AttemptResult =
  | { kind: "response"; status: number; durationMs: number }
  | { kind: "failure"; failure: FailureKind; error: string; durationMs: number };

export type Verdict = "complete" | "retry" | "dead_letter";

/**
 * The delivery state table: 2xx completes; 4xx other than 408 and 429 dead-letters at once;
 * 408, 429, 5xx, network errors and timeouts retry while attempts remain. Anything else
 * (1xx, 3xx: redirects are never followed) is a failure that retries.
 */
export function verdictOf(result: AttemptResult): Verdict {
  if (result.kind === "failure") {
    return result.failure === "blocked_address" ? "dead_letter" : "retry";
  }
  const status = result.status;
  if (status >= 200 && status < 300) {
    return "complete";
  }
  if (status >= 400 && status < 500 && status !== 408 && status !== 429) {
    return "dead_letter";
  }
  return "retry";
}

/** Delay before `attempt` (2..5), scaled for the long stages (30 s and 5 min). */
export function delayBeforeAttempt(attempt: number, longScale: number): number {
  const stage = deliveryRetryLadder.find((step) => step.attempt === attempt);
  if (!stage) {
    throw new Error(`no retry stage for attempt ${attempt}`);
  }
  return scaleLong(stage.delayMs, longScale);
}

export function retryStage(attempt: number) {
  const stage = deliveryRetryLadder.find((step) => step.attempt === attempt);
  if (!stage) {
    throw new Error(`no retry stage for attempt ${attempt}`);
  }
  return stage;
}

/** Stages of 30 s and more shrink in tests; 1 s and 5 s always run in real time. */
export function scaleLong(ms: number, longScale: number): number {
  return ms >= 30_000 ? Math.round(ms * longScale) : ms;
}
