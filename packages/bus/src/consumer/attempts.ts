import { backoffMs } from "../outcomes.ts";
import { PoisonRecordError } from "../serde.ts";

/** The key a record's attempts are counted under. */
export function recordAttemptKey(topic: string, partition: number, offset: string): string {
  return `${topic}/${partition}/${offset}`;
}

/** The key a batch's attempts are counted under: a batch is known by its first offset. */
export function batchAttemptKey(topic: string, partition: number, firstOffset: string): string {
  return `batch:${topic}/${partition}/${firstOffset}`;
}

/**
 * How many times each record (or batch) has failed so far, and, apart from that, how many tries
 * in a row met an unreachable store: outage tries never count toward parking.
 */
export class Attempts {
  readonly #failed = new Map<string, number>();
  readonly #outageTries = new Map<string, number>();

  /** The number of the attempt about to be made: 1 when nothing failed yet. */
  next(key: string): number {
    return (this.#failed.get(key) ?? 0) + 1;
  }

  /** Remembers that `attempt` failed, so the redelivery is the next one. */
  failed(key: string, attempt: number): void {
    this.#failed.set(key, attempt);
  }

  /** Forgets the failures (not the outage tries): a batch handed over one record at a time. */
  forget(key: string): void {
    this.#failed.delete(key);
  }

  /** Forgets everything about a record or batch that is done or parked. */
  settled(key: string): void {
    this.#failed.delete(key);
    this.#outageTries.delete(key);
  }

  /** Counts one more try that met an outage and answers how many in a row that makes. */
  outageTry(key: string): number {
    const tries = (this.#outageTries.get(key) ?? 0) + 1;
    this.#outageTries.set(key, tries);
    return tries;
  }
}

/** What follows a record handler's thrown error. */
export type RecordFailure =
  | { readonly kind: "park"; readonly reason: string }
  | { readonly kind: "outage" }
  | { readonly kind: "retry"; readonly afterMs: number };

/**
 * An unreadable record is parked at once; an unreachable store is waited out; any other error
 * is retried with back-off until `maxAttempts` failed, then the record is parked.
 */
export function afterRecordFailure(
  error: unknown,
  attempt: number,
  maxAttempts: number,
  isUnavailable: (error: unknown) => boolean,
): RecordFailure {
  if (error instanceof PoisonRecordError) {
    return { kind: "park", reason: error.message };
  }
  if (isUnavailable(error)) {
    return { kind: "outage" };
  }
  if (attempt >= maxAttempts) {
    return { kind: "park", reason: `handler failed ${attempt} times: ${(error as Error).message}` };
  }
  return { kind: "retry", afterMs: backoffMs(attempt) };
}

/** What follows a batch handler's thrown error. */
export type BatchFailure =
  | { readonly kind: "outage" }
  | { readonly kind: "retry"; readonly afterMs: number }
  | { readonly kind: "isolate" };

/**
 * An unreachable store is waited out; any other error retries the whole batch with back-off
 * until `maxAttempts` failed, then its records are handed over one at a time.
 */
export function afterBatchFailure(
  error: unknown,
  attempt: number,
  maxAttempts: number,
  isUnavailable: (error: unknown) => boolean,
): BatchFailure {
  if (isUnavailable(error)) {
    return { kind: "outage" };
  }
  if (attempt < maxAttempts) {
    return { kind: "retry", afterMs: backoffMs(attempt) };
  }
  return { kind: "isolate" };
}
