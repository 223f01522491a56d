import type { CsvRecord, Fields } from "../domain/csv.ts";
import type { RowResult } from "../domain/nal-row.ts";

/**
 * The reader and the diff give the event loop a turn after this many rows. The store lane's
 * every step (COPY chunk taken, COPY done, commit) is a callback; run between batches only, it
 * waited for whole batches to be parsed and diffed, and Postgres sat idle meanwhile.
 */
const YIELD_EVERY_ROWS = 250;

/** Counts rows and says when the event loop is due a turn. */
export class LoopTurns {
  #rows = 0;

  due(): boolean {
    this.#rows += 1;
    if (this.#rows < YIELD_EVERY_ROWS) {
      return false;
    }
    this.#rows = 0;
    return true;
  }
}

/** Typed rows of one file, batched for the store. */
export interface RowBatches {
  /** Types `record` into the pending batch. */
  add(record: CsvRecord): void;
  /** Rows typed and not handed to the store yet. */
  waiting(): number;
  /** Full batches, or with `all` every row left, each as its store step; each is taken once. */
  take(all: boolean): (() => Promise<void>)[];
}

/**
 * Batches rows typed (or keyed) as each record is read. A record's raw fields (165 strings on a
 * roll row) then live for one row: held until their batch was full, they outlived the young
 * generation's collections, which copied and promoted them (about a sixth of the ingest's CPU per
 * row).
 */
export function rowBatches<T>(
  batchSize: number,
  take: (record: CsvRecord) => T,
  store: (rows: readonly T[]) => Promise<void>,
): RowBatches {
  let pending: T[] = [];
  const full: T[][] = [];
  return {
    add(record) {
      pending.push(take(record));
      if (pending.length >= batchSize) {
        full.push(pending);
        pending = [];
      }
    },
    waiting: () => pending.length + full.reduce((sum, batch) => sum + batch.length, 0),
    take(all) {
      if (all && pending.length > 0) {
        full.push(pending);
        pending = [];
      }
      return full.splice(0).map((batch) => () => store(batch));
    },
  };
}

/**
 * Types records with `reader`: a record the CSV reader refused, or every record of a file whose
 * header lacks a required column, becomes a reject. `digest`: the record's, for the row to carry.
 */
export function typedBy<R>(
  unloadable: string | null,
  reader: { read(fields: Fields, line: number, digest?: string | null): RowResult<R> },
): (record: CsvRecord, digest?: string | null) => RowResult<R> {
  return (record, digest = null) => {
    if (unloadable !== null) {
      return {
        ok: false,
        reject: {
          line: record.line,
          column: null,
          reason: "skipped: header lacks a required column",
        },
      };
    }
    if (record.error !== undefined) {
      return { ok: false, reject: { line: record.line, column: null, reason: record.error } };
    }
    return reader.read(record.fields, record.line, digest);
  };
}

/** Why a file's rows cannot be loaded when its header lacks required columns; null when none. */
export function headerLacks(missing: readonly string[]): string | null {
  return missing.length > 0 ? `the header lacks ${missing.join(", ")}` : null;
}
