// What a fault test measured, for `npm run chaos`'s table: each row is appended as one JSON line
// to the file CHAOS_REPORT names (nothing is written when it is unset, as under `npm test`).
import { appendFileSync } from "node:fs";

export interface FaultRow {
  fault: string;
  /** Matches published (webhook faults), or null. */
  matches: number | null;
  uniqueDeliveries: number | null;
  duplicates: number | null;
  lost: number | null;
  /** Responses with a status of 500 or more other than 503. */
  fiveHundreds: number;
  unavailable: number;
  /** Slowest 503 or answer during the fault (ms), or null. */
  slowestAnswerMs: number | null;
  /** From the store's (or process's) return to work flowing again (ms). */
  recoveryMs: number | null;
  /** Lead-views recorded, against reads answered with a lead (null when no reads). */
  leadViewsCharged: number | null;
  readsAnswered: number | null;
}

export function recordFault(row: FaultRow): void {
  const file = process.env.CHAOS_REPORT;
  if (file) {
    appendFileSync(file, `${JSON.stringify(row)}\n`);
  }
}
