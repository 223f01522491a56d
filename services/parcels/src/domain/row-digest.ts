// A roll row's digest: what tells a re-ingest that a row is the one a stored parcel's facts came
// from, without normalizing and hashing those facts again (decision 0160).
import { hash } from "node:crypto";
import type { RollStage } from "@th/contracts";

/**
 * The revision of how a roll row's facts follow from its text: the NAL row reader (what it
 * refuses, and how it types the rest) and `rollFactsOf`. A row whose digest matches the stored
 * one is neither typed nor hashed again, so a change to either must raise it: it is part of every
 * row digest, and raising it makes every stored digest a mismatch, each parcel compared by its
 * content hash again, once. A test holds the facts and rejects of a fixed sample of rows to the
 * value recorded for this revision, and fails until it is raised when they change.
 */
export const ROW_FACTS_REVISION = 1;

/** Base64 characters of each half of a row digest (132 bits). */
const DIGEST_PART = 22;

/**
 * What every row digest of one file shares: the revision, the roll stage (a fact of every row)
 * and the file's header (the same text means the same fields only under the same columns), as
 * 22 base64 characters (132 bits of their SHA-256). Computed once per file.
 */
export function rowDigestContext(header: readonly string[], rollStage: RollStage): string {
  return hash(
    "sha256",
    `${ROW_FACTS_REVISION} ${rollStage} ${JSON.stringify(header)}`,
    "base64",
  ).slice(0, DIGEST_PART);
}

/**
 * A row's digest: its file's context, then 132 bits of the SHA-256 of its text as it stands in
 * the file. Rows of one text read as the same row, so an equal digest means the same facts, and a
 * changed byte a different digest. The text is hashed alone: hashing it joined to the context
 * copied every row once more.
 */
export function rowDigestOf(context: string, text: string): string {
  return context + hash("sha256", text, "base64").slice(0, DIGEST_PART);
}
