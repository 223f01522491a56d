/**
 * A whole number as decimal text, for the limit figures on every response. `String(n)` would keep
 * each text in V8's number-string cache until it was promoted; `toFixed` leaves it young (0032).
 */
export function wholeNumberText(value: number): string {
  return value.toFixed(0);
}
