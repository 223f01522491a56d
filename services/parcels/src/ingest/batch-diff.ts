// A batch of typed roll rows, grouped by folio and diffed against the stored parcels: what the
// store lane stores and how each row counted. No I/O; rejects go to the caller's report.
import { setImmediate as yieldToLoop } from "node:timers/promises";
import type { RollStage } from "@th/contracts";
import { ParcelBatch } from "../db/parcel-store.ts";
import type { Reject } from "../domain/header.ts";
import type { NalRow, RollSale, RowResult } from "../domain/nal-row.ts";
import {
  finishParcel,
  folioOf,
  isLaterRecord,
  isStaleRoll,
  rollFactsOf,
  type StoredParcelState,
  standingInFile,
} from "../domain/parcel.ts";
import { duplicateReject } from "./rejects-report.ts";
import { LoopTurns } from "./row-batches.ts";

/** What every parcel of one file shares. */
export interface FileContext {
  ingestId: string;
  sourceFile: string;
  /** The file's name and size: tells a repeat of this file from a later one. */
  sourceFileId: string;
  rollStage: RollStage;
  asOf: Date;
  schemaId: number;
  /** The county the file's name gives; a row of another county is misplaced. */
  countyNo: number | null;
  now(): Date;
  reject(reject: Reject): void;
}

export interface DiffOutcome {
  batch: ParcelBatch;
  new: number;
  updated: number;
  unchanged: number;
}

/**
 * The batch's loadable rows by folio. A row the reader refused or of another county is reported;
 * of two rows of one parcel the later record is kept and the other reported as a duplicate.
 */
export async function groupByFolio(
  file: FileContext,
  results: readonly RowResult<NalRow>[],
): Promise<Map<string, NalRow>> {
  const byFolio = new Map<string, NalRow>();
  const turns = new LoopTurns();
  for (const result of results) {
    if (turns.due()) {
      await yieldToLoop();
    }
    if (!result.ok) {
      file.reject(result.reject);
      continue;
    }
    const row = result.row;
    if (file.countyNo !== null && row.countyNo !== file.countyNo) {
      // A county's file names its county; a row of another one is misplaced, not that
      // county's parcel, and would be stored under the other county's folio.
      file.reject({
        line: row.line,
        column: "CO_NO",
        reason: `county ${row.countyNo} in a file of county ${file.countyNo}`,
        parcelId: row.parcelId,
      });
      continue;
    }
    const folio = folioOf(row.countyNo, row.parcelId);
    const earlier = byFolio.get(folio);
    if (earlier) {
      const keepLater = isLaterRecord(row, earlier);
      const [kept, dropped] = keepLater ? [row, earlier] : [earlier, row];
      file.reject(duplicateReject(dropped, kept.line));
      if (!keepLater) {
        continue;
      }
    }
    byFolio.set(folio, row);
  }
  return byFolio;
}

const NO_SALES: readonly RollSale[] = [];

/**
 * What the lookup of a batch says of each of its parcels: the stored state, null when none is
 * stored, or undefined when the stored parcel was built from the batch's very row (told by the
 * row's digest, `loadStatesToDiff`): unchanged, with nothing to look at.
 */
export interface StoredStates {
  get(folio: string): StoredParcelState | null | undefined;
  /** False when the stored parcel was built from the batch's very row. */
  has(folio: string): boolean;
}

/** The lookup of a batch in a store that holds none of its parcels. */
export const NOTHING_STORED: StoredStates = { get: () => null, has: () => true };

/** Diffs a batch against the stored states: the parcels to store and how each row counted. */
export async function diffBatch(
  file: FileContext,
  byFolio: ReadonlyMap<string, NalRow>,
  states: StoredStates,
  sales: ReadonlyMap<string, RollSale[]>,
): Promise<DiffOutcome> {
  const observedAt = file.now().toISOString();
  const outcome = {
    batch: new ParcelBatch(file.schemaId, byFolio.size),
    new: 0,
    updated: 0,
    unchanged: 0,
  };
  const turns = new LoopTurns();
  // Keys, then a get: iterating entries made a [folio, row] array for every row.
  for (const folio of byFolio.keys()) {
    const row = byFolio.get(folio) as NalRow;
    if (turns.due()) {
      await yieldToLoop();
    }
    const previous = states.get(folio);
    if (previous === undefined) {
      // The stored parcel's row: it needs neither its facts nor its content hash.
      outcome.unchanged += 1;
      continue;
    }
    // The file repeats this parcel in an earlier batch; the same rule as within a batch.
    const standing = standingInFile(previous?.source ?? null, file.sourceFileId, row);
    if (standing === "earlier") {
      file.reject(duplicateReject(row, previous?.source?.line ?? row.line));
      continue;
    }
    if (isStaleRoll(previous, row.rollYear, file.rollStage)) {
      file.reject({
        line: row.line,
        column: "ASMNT_YR",
        reason: `roll ${row.rollYear} ${file.rollStage} is older than the stored ${previous?.rollYear} ${previous?.rollStage} roll`,
        parcelId: row.parcelId,
      });
      continue;
    }
    const context = {
      ingestId: file.ingestId,
      sourceFile: file.sourceFile,
      sourceFileId: file.sourceFileId,
      rollStage: file.rollStage,
      observedAt,
      asOf: file.asOf,
      previous,
      recordedSales: sales.get(folio) ?? NO_SALES,
    };
    // The content hash first: an unchanged parcel needs neither its signals nor its record.
    const roll = rollFactsOf(row, context);
    if (standing === "later" && previous?.source) {
      // The stored record is an earlier one of this file: it is the duplicate, already counted
      // when it was stored. This row replaces it even when their content is the same, so the
      // store always holds the record that counts and a re-ingest reports the same duplicate.
      file.reject(
        duplicateReject({ line: previous.source.line, parcelId: row.parcelId }, row.line),
      );
      outcome.batch.add(finishParcel(roll, context), true);
      continue;
    }
    if (previous?.contentHash === roll.contentHash) {
      outcome.unchanged += 1;
      continue;
    }
    if (previous) {
      outcome.updated += 1;
    } else {
      outcome.new += 1;
    }
    outcome.batch.add(finishParcel(roll, context), previous !== null);
  }
  return outcome;
}
