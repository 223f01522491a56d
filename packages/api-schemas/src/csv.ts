// CSV fields as RFC 4180 writes them: the cells of the public CSV exports, and of the rolls the
// tests write. An entry point of its own (`@th/api-schemas/csv`), so a writer of CSV loads none of
// the zod schemas with it.

/** RFC 4180: a field holding a comma, quote, CR or LF is quoted, its quotes doubled. */
export function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * What a spreadsheet reads as the start of a formula (OWASP's CSV injection list: =, +, -, @,
 * tab, CR), and LF, which some importers treat as CR.
 */
const FORMULA_START = /^[=+\-@\t\r\n]/;

/**
 * A cell of a CSV a person opens in a spreadsheet: a text a spreadsheet would run as a formula
 * (an owner named `=HYPERLINK(...)`) is prefixed with `'`, so it shows as the text it is. Numbers
 * and booleans are ours, not the caller's, and stay as they are: a negative equity is data
 * (decision 0071). An unknown value is an empty cell.
 */
export function spreadsheetCell(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) {
    return "";
  }
  const text = typeof value === "string" && FORMULA_START.test(value) ? `'${value}` : String(value);
  return csvField(text);
}
