/**
 * Whether `text` is a UTC instant as this API writes one into a cursor (`toISOString`, or with
 * up to six fraction digits as Postgres keeps them) and names a real time. A forged cursor holding
 * 2026-02-30 or 25:61 would otherwise reach Postgres, which refuses it and fails the query: the
 * cursor, not the service, is what is wrong.
 */
export function isUtcInstant(text: string): boolean {
  const match = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?Z$/.exec(text);
  if (!match) {
    return false;
  }
  const toMillis = `${match[1]}.${(match[2] ?? "").padEnd(3, "0").slice(0, 3)}Z`;
  const time = new Date(toMillis);
  return !Number.isNaN(time.getTime()) && time.toISOString() === toMillis;
}
