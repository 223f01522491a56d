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

/** A fault that measured nothing of a kind: no deliveries, no reads, no recovery. */
const NOTHING_MEASURED: Omit<FaultRow, "fault"> = {
  matches: null,
  uniqueDeliveries: null,
  duplicates: null,
  lost: null,
  fiveHundreds: 0,
  unavailable: 0,
  slowestAnswerMs: null,
  recoveryMs: null,
  leadViewsCharged: null,
  readsAnswered: null,
};

/** Appends the row; what it leaves out was not measured (null, or no 5xx and no 503s). */
export function recordFault(row: Pick<FaultRow, "fault"> & Partial<FaultRow>): void {
  const file = process.env.CHAOS_REPORT;
  if (file) {
    const { fault, ...measured } = row;
    appendFileSync(file, `${JSON.stringify({ fault, ...NOTHING_MEASURED, ...measured })}\n`);
  }
}

/** The delivery columns: the webhook ids published, and of them what arrived, twice or never. */
export function deliveryCounts(
  matches: number,
  delivered: { received: number; duplicates: number; lost: number },
): Pick<FaultRow, "matches" | "uniqueDeliveries" | "duplicates" | "lost"> {
  return {
    matches,
    uniqueDeliveries: delivered.received,
    duplicates: delivered.duplicates,
    lost: delivered.lost,
  };
}

/** The read columns: what of `answers` failed (5xx but 503), was refused (503), and the slowest. */
export function readCounts(
  answers: readonly { status: number; ms: number }[],
): Pick<FaultRow, "fiveHundreds" | "unavailable" | "slowestAnswerMs"> {
  return {
    fiveHundreds: answers.filter((answer) => answer.status >= 500 && answer.status !== 503).length,
    unavailable: answers.filter((answer) => answer.status === 503).length,
    slowestAnswerMs: Math.max(...answers.map((answer) => answer.ms)),
  };
}
