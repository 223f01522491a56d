// The listing's opaque cursors: the sort they were issued for and the last row's sort value and
// id, so the next page starts strictly after it whatever was written in between.
import type { PipelineListQuery } from "@th/api-schemas";
import { isUtcInstant } from "@th/service-kit/cursor";

export type PipelineSort = PipelineListQuery["sort"];

export interface ListCursor {
  sort: PipelineSort;
  /** The last row's sort value: an instant, a day, or `infinity` for no follow-up. */
  value: string;
  id: string;
}

/** The column a sort orders by, whether it descends, and whether its values are days. */
export function sortOf(sort: PipelineSort): {
  column: "updated_at" | "added_at" | "follow_up_on";
  descending: boolean;
} {
  const descending = sort.startsWith("-");
  const column = (descending ? sort.slice(1) : sort) as "updated_at" | "added_at" | "follow_up_on";
  return { column, descending };
}

export function encodeCursor(cursor: ListCursor): string {
  return Buffer.from(JSON.stringify([cursor.sort, cursor.value, cursor.id])).toString("base64url");
}

function validValue(sort: PipelineSort, value: string): boolean {
  if (sortOf(sort).column === "follow_up_on") {
    return value === "infinity" || /^\d{4}-\d\d-\d\d$/.test(value);
  }
  return isUtcInstant(value);
}

/**
 * The cursor a page was issued with, or undefined for one this API did not issue or that was
 * issued for another sort.
 */
export function decodeCursor(text: string, sort: PipelineSort): ListCursor | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) {
    return undefined;
  }
  const [issuedFor, value, id] = parsed as unknown[];
  if (issuedFor !== sort || typeof value !== "string" || typeof id !== "string") {
    return undefined;
  }
  if (id.length === 0 || id.length > 64 || !validValue(sort, value)) {
    return undefined;
  }
  return { sort, value, id };
}

/** The history's cursor: the last version shown. */
export function encodeVersionCursor(version: number): string {
  return Buffer.from(`v${version}`).toString("base64url");
}

export function decodeVersionCursor(text: string): number | undefined {
  const match = /^v([1-9]\d{0,8})$/.exec(Buffer.from(text, "base64url").toString("utf8"));
  return match?.[1] === undefined ? undefined : Number(match[1]);
}
