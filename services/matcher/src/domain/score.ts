// The one definition of a lead's score. Ingest matching, manual runs, polling and the webhook
// payload all take the score from here, so a number a tenant sees can always be re-derived from
// the recipe and the parcel's signals.
//
//   positive_total = sum of the recipe's positive weights
//   raw            = (sum of the weights of the recipe signals that fired) / positive_total
//   score          = round4(clamp(raw, 0, 1))
//   contribution   = round4(weight / positive_total)   for each recipe signal that fired
//
// A recipe without weighted signals scores every parcel 1: it asks for nothing a parcel could
// fall short of. Negative weights are penalties; they can pull the raw score below 0, which the
// clamp turns into 0. The raw score never exceeds 1 (the positive weights are the denominator),
// so the upper clamp only guards against floating-point noise.
//
// Determinism: weights are summed in signal-name order, so the same recipe and signals give the
// same bits whatever order the recipe's keys or the parcel's signals arrived in.
import type { LeadSignal } from "@th/api-schemas";

export const SCORE_DECIMALS = 4;
const SCALE = 10 ** SCORE_DECIMALS;

/** What one fired signal added to the score. */
export interface SignalContribution {
  signal: LeadSignal;
  /** The recipe's weight; 0 for a required signal the recipe does not weight. */
  weight: number;
  /** weight / positive_total, rounded to SCORE_DECIMALS; negative for a penalty. */
  contribution: number;
}

export interface ScoreResult {
  /** In [0, 1], rounded to SCORE_DECIMALS. */
  score: number;
  /** One entry per recipe signal that fired: largest contribution first, then by name. */
  contributions: SignalContribution[];
  /** The signals of `contributions`, in the same order. */
  signals_fired: LeadSignal[];
}

/**
 * Rounds half away from zero to SCORE_DECIMALS places. The value is first cut to 12 significant
 * digits so that binary noise (0.12345 is stored as 0.123449999...) rounds the way the decimal
 * reads; -0 comes back as 0.
 */
export function roundScore(value: number): number {
  const scaled = Number((Math.abs(value) * SCALE).toPrecision(12));
  const rounded = (Math.sign(value) * Math.round(scaled)) / SCALE;
  return rounded === 0 ? 0 : rounded;
}

/**
 * Scores the parcel's fired signals against the recipe's weights. A weight of 0 marks a signal
 * the recipe tracks without weighting (a required signal): it is reported when it fires but adds
 * nothing. Fired signals the recipe does not mention are ignored.
 */
export function scoreSignals(
  weights: Readonly<Partial<Record<LeadSignal, number>>>,
  firedSignals: Iterable<string>,
): ScoreResult {
  const fired = new Set(firedSignals);
  const tracked = (Object.keys(weights) as LeadSignal[])
    .filter((signal) => weights[signal] !== undefined)
    .sort();

  let positiveTotal = 0;
  for (const signal of tracked) {
    const weight = weights[signal] ?? 0;
    if (weight > 0) {
      positiveTotal += weight;
    }
  }

  let firedTotal = 0;
  const contributions: SignalContribution[] = [];
  for (const signal of tracked) {
    if (!fired.has(signal)) {
      continue;
    }
    const weight = weights[signal] ?? 0;
    firedTotal += weight;
    contributions.push({
      signal,
      weight,
      contribution: positiveTotal > 0 ? roundScore(weight / positiveTotal) : 0,
    });
  }
  contributions.sort((a, b) => b.contribution - a.contribution || (a.signal < b.signal ? -1 : 1));

  const raw = positiveTotal > 0 ? firedTotal / positiveTotal : 1;
  return {
    score: roundScore(Math.min(1, Math.max(0, raw))),
    contributions,
    signals_fired: contributions.map((entry) => entry.signal),
  };
}
