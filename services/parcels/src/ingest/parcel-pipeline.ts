// The lookup, store and publish lanes of a roll ingest. The next batch is parsed and diffed while
// this one is stored and the one before it published, and (unless the store was empty) looked up
// while the one before it is diffed, so Postgres and the ingest process each keep a core busy; at
// most one batch waits for each lane, so memory stays flat.
import type { Pool } from "@th/db";
import {
  advanceWatermark,
  type BatchKeys,
  dropSecondaryIndexes,
  insertNewParcels,
  loadRecordedSales,
  loadStatesToDiff,
  type PublishParcels,
  upsertParcels,
} from "../db/parcel-store.ts";
import type { Reject } from "../domain/header.ts";
import type { NalRow, RollSale, RowResult } from "../domain/nal-row.ts";
import { folioOf } from "../domain/parcel.ts";
import {
  type DiffOutcome,
  diffBatch,
  type FileContext,
  groupByFolio,
  NOTHING_STORED,
  type StoredStates,
} from "./batch-diff.ts";
import { LateRow, type RollRow } from "./roll-rows.ts";

export type Stage = "read" | "diff" | "store" | "publish" | "index" | "waitStore";

/** What one ingest counted and how long each of its stages took (stages overlap). */
export class IngestTally {
  readonly counts = {
    read: 0,
    new: 0,
    changed: 0,
    unchanged: 0,
    published: 0,
    storedThrough: 0,
  };
  readonly stageMs: Record<Stage, number> = {
    read: 0,
    diff: 0,
    store: 0,
    publish: 0,
    index: 0,
    waitStore: 0,
  };

  async timed<T>(stage: Stage, work: () => Promise<T> | T): Promise<T> {
    const begin = performance.now();
    try {
      return await work();
    } finally {
      this.stageMs[stage] += performance.now() - begin;
    }
  }

  countOutcome(outcome: DiffOutcome): void {
    this.counts.new += outcome.new;
    this.counts.changed += outcome.updated;
    this.counts.unchanged += outcome.unchanged;
  }
}

export interface StoreState {
  /**
   * The store held no parcel (or none of this file's, says the caller): every parcel is new
   * unless the file repeats it or the caller was wrong, which a failed copy reveals.
   */
  firstLoad: boolean;
  /** Sales were recorded: rolls are enriched with them. */
  sales: boolean;
  /** The secondary indexes are dropped before the first batch and built after the last. */
  deferIndexes: boolean;
  /** The caller moves the watermark (files loaded side by side). */
  watermarkByCaller: boolean;
}

/** A batch whose parcels are being looked up. */
interface LookingUp {
  /**
   * The batch's rows grouped by folio (a first load's), or as accepted, typed or to be typed once
   * the lookup is back (a diff's).
   */
  rows: ReadonlyMap<string, NalRow> | readonly RollRow[];
  /** What is looked up: each folio of the batch once, with its row's digest and line. */
  keys: BatchKeys;
  found: Promise<[StoredStates, ReadonlyMap<string, RollSale[]>]>;
}

/** Folios of the batch the store lane was handed last. */
interface Folios {
  readonly size: number;
  has(folio: string): boolean;
}

const NOTHING_STORING: Folios = new Set<string>();

export class ParcelPipeline {
  #storing: Promise<void> = Promise.resolve();
  /** The batch accepted last, looked up while the next one is read; diffed when that arrives. */
  #ahead: LookingUp | null = null;
  #publishing: Promise<void> = Promise.resolve();
  #storingFolios: Folios = NOTHING_STORING;
  /** Rejects of the last batch diffed, reported after the next batch's rows (see `#report`). */
  #heldRejects: Reject[] = [];
  #storeError: unknown;
  #indexesDropped = false;

  readonly #pool: Pool;
  readonly #publish: PublishParcels;
  readonly #file: FileContext;
  readonly #tally: IngestTally;
  readonly #state: StoreState;

  constructor(
    pool: Pool,
    publish: PublishParcels,
    file: FileContext,
    tally: IngestTally,
    state: StoreState,
  ) {
    this.#pool = pool;
    this.#publish = publish;
    this.#file = file;
    this.#tally = tally;
    this.#state = state;
  }

  /** The secondary indexes were dropped for this load and are still to be built. */
  get indexesDropped(): boolean {
    return this.#indexesDropped;
  }

  /**
   * Rows are best taken untyped (`LateRow`): a diff types only those of parcels the store does
   * not hold as built from the very row. A first load builds every parcel, so it takes them typed.
   */
  get typesLate(): boolean {
    return !this.#state.firstLoad;
  }

  /**
   * Takes one batch of rows and starts looking its parcels up, then diffs the batch before it and
   * hands that to the store lane: a batch's lookup runs in Postgres while the next batch is read,
   * so neither waits for the other. A first load without recorded sales looks nothing up. Only a
   * batch that stores parcels can make a later batch's lookup stale, so a re-ingest of unchanged
   * rows checks nothing row by row.
   */
  async accept(rows: readonly RollRow[]): Promise<void> {
    if (this.#storeError !== undefined) {
      throw this.#storeError;
    }
    this.#tally.counts.read += rows.length;
    if (this.#state.firstLoad) {
      await this.#acceptNew(rows);
      return;
    }
    const keys = keysOf(rows, this.#file.countyNo);
    const ahead = this.#ahead;
    this.#ahead = null;
    // A parcel the store lane may still be writing must be looked up once it is written.
    if (this.#storingHolds(keys.folios)) {
      if (ahead !== null) {
        await this.#diffAndStore(ahead);
      }
      await this.#storing;
      this.#ahead = this.#lookUp(rows, keys);
      await dispatched();
      return;
    }
    let lookingUp = this.#lookUp(rows, keys);
    await dispatched();
    if (ahead !== null) {
      await this.#diffAndStore(ahead);
      // The batch before stores one of this batch's parcels (a parcel the file repeats): this
      // lookup may have read the store before that write, so it is done again after it.
      if (this.#storingHolds(keys.folios)) {
        await this.#storing;
        lookingUp = this.#lookUp(rows, keys);
      }
    }
    this.#ahead = lookingUp;
  }

  /**
   * A first load's batch, every parcel taken for new: grouped at once (its rejects reported as
   * they come), and diffed at once unless recorded sales are looked up while the next is read.
   */
  async #acceptNew(rows: readonly RollRow[]): Promise<void> {
    const byFolio = await groupByFolio(this.#file, rows.map(typedNow));
    if (byFolio.size === 0) {
      return;
    }
    // No stored state is looked up: the folios are all a lookup of recorded sales needs.
    const keys = { folios: [...byFolio.keys()], digests: [], lines: [] };
    if (!this.#state.sales) {
      // Nothing to look up: diffed at once, so its rows die before the young generation's next
      // collection instead of being copied and promoted while the next batch is read.
      await this.#diffAndStore(this.#lookUp(byFolio, keys));
      return;
    }
    const ahead = this.#ahead;
    this.#ahead = this.#lookUp(byFolio, keys);
    await dispatched();
    if (ahead !== null) {
      await this.#diffAndStore(ahead);
    }
  }

  /** Whether one of `folios` is in the batch the store lane was handed last, if it stores any. */
  #storingHolds(folios: readonly string[]): boolean {
    const storing = this.#storingFolios;
    if (storing.size === 0) {
      return false;
    }
    for (const folio of folios) {
      if (storing.has(folio)) {
        return true;
      }
    }
    return false;
  }

  /** Waits until every accepted batch is stored. */
  async stored(): Promise<void> {
    const ahead = this.#ahead;
    this.#ahead = null;
    if (ahead !== null) {
      await this.#diffAndStore(ahead);
    }
    this.#report([], true);
    await this.#storing;
  }

  /** Waits until every stored batch is on the topic. */
  published(): Promise<void> {
    return this.#tally.timed("publish", () => this.#publishing);
  }

  /** Lets outstanding work settle after a failure, whatever it ends in. */
  async settle(): Promise<void> {
    await this.#storing.catch(() => {});
    await this.#publishing.catch(() => {});
  }

  /**
   * Starts looking a batch's parcels up: their stored states (on a first load, none, unless
   * `states`) and their recorded sales.
   */
  #lookUp(rows: LookingUp["rows"], keys: BatchKeys, states = !this.#state.firstLoad): LookingUp {
    const found = Promise.all([
      !states || keys.folios.length === 0
        ? NOTHING_STORED
        : loadStatesToDiff(this.#pool, keys, this.#file.sourceFileId, this.#state.sales),
      this.#state.sales
        ? loadRecordedSales(this.#pool, keys.folios)
        : new Map<string, RollSale[]>(),
    ]);
    // Awaited when the batch is diffed; a failure meanwhile is no unhandled rejection.
    found.catch(() => {});
    return { rows, keys, found };
  }

  /** Diffs a looked-up batch and hands it to the store lane once the one before is stored. */
  async #diffAndStore(batch: LookingUp): Promise<void> {
    const { byFolio, outcome } = await this.#diff(batch);
    await this.#tally.timed("waitStore", () => this.#storing);
    // A batch that stores nothing (all unchanged) changes no state a later lookup reads.
    this.#storingFolios = outcome.batch.size > 0 ? byFolio : NOTHING_STORING;
    this.#storing = this.#store(byFolio, outcome);
    this.#storing.catch((error: unknown) => {
      this.#storeError ??= error;
    });
  }

  async #diff(
    batch: LookingUp,
  ): Promise<{ byFolio: ReadonlyMap<string, NalRow>; outcome: DiffOutcome }> {
    const [states, sales] = await this.#tally.timed("read", () => batch.found);
    return this.#tally.timed("diff", async () => {
      if (!Array.isArray(batch.rows)) {
        const byFolio = batch.rows as ReadonlyMap<string, NalRow>;
        return { byFolio, outcome: await diffBatch(this.#file, byFolio, states, sales) };
      }
      return this.#typeAndDiff(batch.rows, states, sales);
    });
  }

  /**
   * A diff's batch: the rows of parcels the store holds as built from the very row count as
   * unchanged untyped; the others are typed, grouped and diffed. Their rejects are reported in
   * the order they were when every row was typed and grouped as it was read (`#report`).
   */
  async #typeAndDiff(
    rows: readonly RollRow[],
    states: StoredStates,
    sales: ReadonlyMap<string, RollSale[]>,
  ): Promise<{ byFolio: ReadonlyMap<string, NalRow>; outcome: DiffOutcome }> {
    const countyNo = this.#file.countyNo;
    const results: RowResult<NalRow>[] = [];
    let stored = 0;
    for (const row of rows) {
      if (!(row instanceof LateRow)) {
        results.push(row);
      } else if ((countyNo === null || row.countyNo === countyNo) && !states.has(row.folio)) {
        stored += 1;
      } else {
        results.push(row.typed());
      }
    }
    const grouped: Reject[] = [];
    const diffed: Reject[] = [];
    const byFolio = await groupByFolio({ ...this.#file, reject: (r) => grouped.push(r) }, results);
    const outcome = await diffBatch(
      { ...this.#file, reject: (r) => diffed.push(r) },
      byFolio,
      states,
      sales,
    );
    outcome.unchanged += stored;
    this.#report(grouped, false);
    if (byFolio.size > 0) {
      this.#report(diffed, true);
    }
    return { byFolio, outcome };
  }

  /**
   * Reports a diff's rejects in the order a reader that typed and grouped each batch as it came
   * would have: a batch's own rows' rejects at once (`last` false), and those of its diff after
   * the rows of the next batch that holds a parcel (its diff ran when that batch came in). So
   * the report is the same whichever rows were typed.
   */
  #report(rejects: readonly Reject[], last: boolean): void {
    if (!last) {
      for (const reject of rejects) {
        this.#file.reject(reject);
      }
      return;
    }
    for (const reject of this.#heldRejects) {
      this.#file.reject(reject);
    }
    this.#heldRejects = [...rejects];
  }

  /**
   * Stores a diffed batch once every earlier batch is stored, then hands its events to the
   * publisher. On a first load every parcel is taken for new without a lookup; should the file
   * repeat a parcel of an earlier batch, nothing of the batch is stored and it is looked up and
   * diffed again against what is stored now.
   */
  async #store(byFolio: ReadonlyMap<string, NalRow>, diffed: DiffOutcome): Promise<void> {
    let outcome = diffed;
    if (outcome.batch.size > 0) {
      if (this.#state.deferIndexes && !this.#indexesDropped) {
        this.#indexesDropped = true;
        await dropSecondaryIndexes(this.#pool);
      }
      let maxSeq = await this.#tally.timed("store", () =>
        this.#state.firstLoad
          ? insertNewParcels(this.#pool, outcome.batch)
          : upsertParcels(this.#pool, outcome.batch),
      );
      if (maxSeq === null) {
        const again = this.#lookUp(byFolio, keysOf(grouped(byFolio), null), true);
        outcome = (await this.#diff(again)).outcome;
        maxSeq = await this.#tally.timed("store", () => upsertParcels(this.#pool, outcome.batch));
      }
      await this.#publishAfterEarlier(outcome, maxSeq);
    }
    this.#tally.countOutcome(outcome);
  }

  /**
   * This batch's publish runs while later batches are read, diffed and stored. At most one
   * publish is outstanding (memory stays flat), publishes go out in store order, and the
   * watermark only moves past a batch once it and every earlier one are on the topic.
   */
  async #publishAfterEarlier(outcome: DiffOutcome, through: number): Promise<void> {
    await this.#tally.timed("publish", () => this.#publishing);
    const records = outcome.batch.records();
    const counts = this.#tally.counts;
    counts.storedThrough = Math.max(counts.storedThrough, through);
    this.#publishing = this.#publish(records).then(async () => {
      if (!this.#state.watermarkByCaller) {
        await advanceWatermark(this.#pool, through);
      }
      counts.published += records.values.length;
    });
    this.#publishing.catch(() => {});
  }
}

/** A row typed, whether it came typed or not. */
function typedNow(row: RollRow): RowResult<NalRow> {
  return row instanceof LateRow ? row.typed() : row;
}

/** A grouped batch's rows as typed rows. */
function grouped(byFolio: ReadonlyMap<string, NalRow>): RowResult<NalRow>[] {
  return [...byFolio.values()].map((row) => ({ ok: true, row }));
}

/**
 * What a batch looks up: each folio once, with its row's digest and line, in the order the rows
 * came. A row the reader rejects, or of another county than the file's, is left out (it is
 * reported, never stored); a folio the batch repeats goes without a digest, so its rows are
 * diffed rather than told by digest.
 */
function keysOf(rows: readonly RollRow[], countyNo: number | null): BatchKeys {
  const folios: string[] = [];
  const digests: (string | null)[] = [];
  const lines: number[] = [];
  const at = new Map<string, number>();
  const add = (folio: string, county: number, digest: string | null, line: number) => {
    if (countyNo !== null && county !== countyNo) {
      return;
    }
    const index = at.get(folio);
    if (index === undefined) {
      at.set(folio, folios.length);
      folios.push(folio);
      digests.push(digest);
      lines.push(line);
    } else {
      digests[index] = null;
    }
  };
  for (const row of rows) {
    if (row instanceof LateRow) {
      add(row.folio, row.countyNo, row.digest, row.line);
    } else if (row.ok) {
      const { countyNo: county, parcelId, digest, line } = row.row;
      add(folioOf(county, parcelId), county, digest, line);
    }
  }
  return { folios, digests, lines };
}

/**
 * Resolves once the pool has sent the queries just made: it hands them a connection on the next
 * tick, which otherwise came only once the next batch was read, and each lookup started late.
 */
function dispatched(): Promise<void> {
  return new Promise((resolve) => process.nextTick(resolve));
}
