/** One problem found in an input file: which row, which column, and why it was skipped. */
export interface Reject {
  /** File line the row starts on; the header is line 1. */
  line: number;
  column: string | null;
  reason: string;
  parcelId?: string | null;
}

/** Where each known column sits in this file's header, and what drifted from the layout. */
export interface HeaderMap<Column extends string> {
  /** Field index of each known column, absent when the file lacks it. */
  index: ReadonlyMap<Column, number>;
  width: number;
  missing: Column[];
  unknown: string[];
  /** Known columns the file lacks that rows cannot be stored without. */
  missingRequired: Column[];
}

/**
 * Maps a header row onto a layout by name, so reordered columns still read correctly. Aliases
 * (the ten-character DBF names) count as their DOR names. Columns outside the layout are ignored
 * but reported, as are layout columns the file lacks.
 */
export function mapHeader<Column extends string>(
  header: readonly string[],
  layout: readonly Column[],
  aliases: Readonly<Record<string, Column>>,
  required: readonly Column[],
): HeaderMap<Column> {
  const known = new Set<string>(layout);
  const index = new Map<Column, number>();
  const unknown: string[] = [];
  header.forEach((raw, position) => {
    const name = raw.trim().toUpperCase();
    const column = known.has(name) ? (name as Column) : aliases[name];
    if (column && !index.has(column)) {
      index.set(column, position);
    } else {
      unknown.push(raw.trim() === "" ? `(blank column ${position + 1})` : raw.trim());
    }
  });
  const missing = layout.filter((column) => !index.has(column));
  return {
    index,
    width: header.length,
    missing,
    unknown,
    missingRequired: required.filter((column) => !index.has(column)),
  };
}

/** Header drift as reject-report lines (line 1), one per missing or unexpected column. */
export function headerDriftRejects<Column extends string>(map: HeaderMap<Column>): Reject[] {
  return [
    ...map.missingRequired.map((column) => ({
      line: 1,
      column,
      reason: "required column missing from header; every row of this file is skipped",
    })),
    ...map.missing
      .filter((column) => !map.missingRequired.includes(column))
      .map((column) => ({
        line: 1,
        column,
        reason: "column missing from header; read as empty",
      })),
    ...map.unknown.map((column) => ({
      line: 1,
      column,
      reason: "unexpected column in header; ignored",
    })),
  ];
}

/** True when the first record looks like a header rather than data (SDF files may have none). */
export function looksLikeHeader(fields: readonly string[]): boolean {
  const first = (fields[0] ?? "").trim().toUpperCase();
  return first === "CO_NO" || /^[A-Z_]+$/.test(first);
}
