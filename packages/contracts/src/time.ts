import type { Instant, UtcDay } from "./types.ts";

// Instants are strings rather than epoch millis because the webhook payload
// and the HTTP headers already speak RFC 3339, and a string read off a topic
// in a debugging session needs no conversion. One shape only, so equal
// instants compare equal as strings and sort lexically.
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

export function toInstant(at: Date | number = new Date()): Instant {
  return new Date(at).toISOString();
}

export function utcDayOf(at: Date | number | Instant = new Date()): UtcDay {
  return new Date(at).toISOString().slice(0, 10);
}

/** True only for the canonical `Date#toISOString()` form of a valid instant. */
export function isInstant(value: string): boolean {
  return (
    INSTANT.test(value) &&
    !Number.isNaN(Date.parse(value)) &&
    toInstant(Date.parse(value)) === value
  );
}

export function isUtcDay(value: string): boolean {
  return DAY.test(value) && isInstant(`${value}T00:00:00.000Z`);
}
