// The soak bench's compressed clock: every service of the stack reads it (the time rows are
// stamped with, and the `now` of each retention). Within a step it runs at real speed, so what a
// service times in real seconds (a retry's 1 s, a lease) still works; between steps the bench
// moves it forward, a simulated day at a time.
import { performance } from "node:perf_hooks";

export class SoakClock {
  #simulatedAt: number;
  #realAt: number;

  constructor(start: Date) {
    this.#simulatedAt = start.getTime();
    this.#realAt = performance.now();
  }

  /** Simulated milliseconds since the epoch. */
  now(): number {
    return this.#simulatedAt + (performance.now() - this.#realAt);
  }

  date(): Date {
    return new Date(this.now());
  }

  /** Moves the clock to `at` (never backwards: rows stamped later must not look older). */
  set(at: Date): void {
    const target = at.getTime();
    if (target < this.now()) {
      throw new Error(`the soak clock does not go back (${at.toISOString()})`);
    }
    this.#simulatedAt = target;
    this.#realAt = performance.now();
  }
}

export const DAY_MS = 86_400_000;

/** Midnight UTC of the first day of the month `months` after `at`'s month. */
export function monthStart(at: Date, months = 0): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + months, 1));
}

/** `YYYY-MM-DD` of a UTC day. */
export function dayOf(at: Date): string {
  return at.toISOString().slice(0, 10);
}
