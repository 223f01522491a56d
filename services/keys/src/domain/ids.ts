import { randomBytes } from "node:crypto";

/** Prefixed random ids (`ten_…`, `mem_…`, `key_…`) so an id says what it names. */
export function newId(prefix: "ten" | "mem" | "key" | "chg" | "msg"): string {
  return `${prefix}_${randomBytes(12).toString("base64url")}`;
}
