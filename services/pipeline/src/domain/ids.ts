import { randomBytes } from "node:crypto";

/** Prefixed random ids (`pli_…` an item, `ple_…` an event) so an id says what it names. */
export function newId(prefix: "pli" | "ple" | "note" | "stg" | "pse"): string {
  return `${prefix}_${randomBytes(12).toString("base64url")}`;
}
