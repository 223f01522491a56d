// A roll file's records as the parcel pipeline takes them: typed at once (a first load builds
// every parcel), or keyed by folio and digest and typed only when their diff needs the row (a
// re-ingest mostly meets rows the store holds already, which need nothing more).
import { type CsvRecord, type Fields, lineFieldsOf, unreadable } from "../domain/csv.ts";
import type { NalRow, NalRowReader, RowResult } from "../domain/nal-row.ts";
import { folioOf } from "../domain/parcel.ts";
import { rowDigestOf } from "../domain/row-digest.ts";
import { typedBy } from "./row-batches.ts";

/**
 * A roll record read but not typed yet: its folio, county and digest, enough for a lookup to tell
 * whether the store holds a parcel built from this very row. It keeps the record's text and line
 * (and the fields of a quoted record), not a plain line's split: most such rows are never typed,
 * and their splits outlived the young generation's collections. A row of the wrong width is
 * keyed too: no stored row has its digest (it was never stored), so it is typed and rejected.
 */
export class LateRow {
  readonly line: number;
  readonly folio: string;
  readonly countyNo: number;
  readonly digest: string;
  readonly #text: string;
  readonly #fields: Fields | null;
  readonly #rows: RollRows;

  constructor(
    rows: RollRows,
    record: CsvRecord,
    text: string,
    key: { countyNo: number; parcelId: string },
    digest: string,
  ) {
    this.#rows = rows;
    this.line = record.line;
    this.#text = text;
    this.#fields = Array.isArray(record.fields) ? record.fields : null;
    this.countyNo = key.countyNo;
    this.folio = folioOf(key.countyNo, key.parcelId);
    this.digest = digest;
  }

  /** The row typed, as if it had been at once (a reject where the reader rejects it). */
  typed(): RowResult<NalRow> {
    const fields = this.#fields ?? lineFieldsOf(this.#text);
    return this.#rows.checkedTyped({ fields, line: this.line, text: this.#text }, this.digest);
  }
}

/** A roll record as the pipeline takes it: typed, or to be typed when needed. */
export type RollRow = RowResult<NalRow> | LateRow;

/** Types or keys one roll file's records by its header's reader and digest context. */
export class RollRows {
  readonly #type: (record: CsvRecord, digest: string | null) => RowResult<NalRow>;
  readonly #reader: NalRowReader;
  readonly #digestContext: string;
  readonly #unloadable: boolean;

  /** `unloadable`: why the header fails every row, or null; `digestContext`: the file's. */
  constructor(unloadable: string | null, reader: NalRowReader, digestContext: string) {
    this.#type = typedBy(unloadable, reader);
    this.#reader = reader;
    this.#digestContext = digestContext;
    this.#unloadable = unloadable !== null;
  }

  /** The record typed, with its digest (taken here unless given). */
  typed(record: CsvRecord, digest?: string): RowResult<NalRow> {
    return this.#type(
      record,
      digest ?? (record.text === undefined ? null : rowDigestOf(this.#digestContext, record.text)),
    );
  }

  /**
   * The record typed, its text checked first for what the CSV reader refuses: a line read with
   * its fields split on demand was not (`CsvReader.splitOnDemand`).
   */
  checkedTyped(record: CsvRecord & { text: string }, digest?: string): RowResult<NalRow> {
    const problem = this.#unloadable ? null : unreadable(record.text);
    return problem === null
      ? this.typed(record, digest)
      : { ok: false, reject: { line: record.line, column: null, reason: problem } };
  }

  /**
   * The record keyed to be typed later; typed at once when it cannot be keyed (a record the CSV
   * reader refused, a header that fails every row, a county or parcel id the reader rejects). A
   * keyed record's text is checked only when it is typed: one whose digest the store holds was
   * stored, so it held nothing unreadable.
   */
  late(record: CsvRecord): RollRow {
    if (this.#unloadable || record.error !== undefined || record.text === undefined) {
      return this.typed(record);
    }
    const key = this.#reader.key(record.fields);
    // A parcel id holding what the CSV reader refuses (a NUL) goes in no lookup: it is typed now.
    if (key === null || unreadable(key.parcelId) !== null) {
      return this.checkedTyped({ ...record, text: record.text });
    }
    const digest = rowDigestOf(this.#digestContext, record.text);
    return new LateRow(this, record, record.text, key, digest);
  }
}
