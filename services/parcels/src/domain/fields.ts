import type { Fields } from "./csv.ts";

/** Thrown while reading one row; the row is rejected with this column and reason. */
export class FieldError extends Error {
  readonly column: string;

  constructor(column: string, reason: string) {
    super(reason);
    this.name = "FieldError";
    this.column = column;
  }
}

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;

/** No roll number comes near a trillion; a larger one is a mistake, and beyond 2^53 not a number. */
const MAX_MAGNITUDE = 1e12;

/**
 * The value of up to 15 plain digits, the form nearly every roll number takes, without a regex
 * and a string-to-number parse; null for anything else.
 */
function plainDigits(raw: string): number | null {
  if (raw.length > 15) {
    return null;
  }
  let value = 0;
  for (let index = 0; index < raw.length; index++) {
    const digit = raw.charCodeAt(index) - 48;
    if (digit < 0 || digit > 9) {
      return null;
    }
    value = value * 10 + digit;
  }
  return value;
}

/** A column a reader reads, and where the file's header put it (-1 when it lacks the column). */
export interface ColumnAt<Column extends string> {
  readonly column: Column;
  readonly position: number;
}

/**
 * Where each of `wanted` is in one file's rows, by name, resolved once per file. The object has
 * the same shape for every file, so a reader's `at.OWN_NAME` is a plain property read rather than
 * a lookup in the header's map for every field of every row.
 */
export function columnsAt<Column extends string, const Wanted extends readonly Column[]>(
  index: ReadonlyMap<Column, number>,
  wanted: Wanted,
): { readonly [Name in Wanted[number]]: ColumnAt<Name> } {
  return Object.fromEntries(
    wanted.map((column) => [column, { column, position: index.get(column) ?? -1 }]),
  ) as unknown as { readonly [Name in Wanted[number]]: ColumnAt<Name> };
}

/** Reads fields out of one row by the header's positions. Empty text counts as null. */
export class FieldReader<Column extends string> {
  fields: Fields = [];

  /** Trimmed text, or null when blank or absent from the header. */
  text(at: ColumnAt<Column>): string | null {
    if (at.position < 0) {
      return null;
    }
    const value = (this.fields.at(at.position) ?? "").trim();
    return value === "" ? null : value;
  }

  requiredText(at: ColumnAt<Column>): string {
    const value = this.text(at);
    if (value === null) {
      throw new FieldError(at.column, "is empty but required");
    }
    return value;
  }

  /**
   * A whole number (money, areas, years) within `min` and `max` when given; decimals are rounded,
   * anything else rejects the row. Bounds are numbers, not an object: a row reads twenty of these.
   */
  integer(at: ColumnAt<Column>, min?: number, max?: number): number | null {
    const column = at.column;
    const raw = this.text(at);
    if (raw === null) {
      return null;
    }
    let value = plainDigits(raw);
    if (value === null) {
      const cleaned = raw.includes(",") || raw.startsWith("$") ? raw.replace(/[$,]/g, "") : raw;
      if (!NUMBER.test(cleaned)) {
        throw new FieldError(column, `"${truncate(raw)}" is not a number`);
      }
      value = Math.round(Number(cleaned));
      if (!Number.isSafeInteger(value)) {
        throw new FieldError(column, `"${truncate(raw)}" is out of range`);
      }
    }
    if (Math.abs(value) > MAX_MAGNITUDE) {
      throw new FieldError(column, `"${truncate(raw)}" is out of range`);
    }
    if (min !== undefined && value < min) {
      throw new FieldError(column, `${value} is below ${min}`);
    }
    if (max !== undefined && value > max) {
      throw new FieldError(column, `${value} is above ${max}`);
    }
    return value;
  }

  requiredInteger(at: ColumnAt<Column>, min?: number, max?: number): number {
    const value = this.integer(at, min, max);
    if (value === null) {
      throw new FieldError(at.column, "is empty but required");
    }
    return value;
  }

  /** A code written with leading zeros (DOR_UC "001", QUAL_CD "01"), padded back when a
   * spreadsheet dropped them. */
  code(at: ColumnAt<Column>, width: number): string | null {
    const column = at.column;
    const raw = this.text(at);
    if (raw === null) {
      return null;
    }
    if (/^\d+$/.test(raw)) {
      if (raw.length > width) {
        const trimmed = raw.replace(/^0+(?=\d)/, "");
        if (trimmed.length > width) {
          throw new FieldError(column, `"${truncate(raw)}" is longer than ${width} digits`);
        }
        return trimmed.padStart(width, "0");
      }
      return raw.padStart(width, "0");
    }
    throw new FieldError(column, `"${truncate(raw)}" is not a ${width}-digit code`);
  }
}

function truncate(value: string): string {
  return value.length > 40 ? `${value.slice(0, 40)}…` : value;
}
