// The lookup, store and publish lanes of a roll ingest. The next batch is parsed and diffed while
// this one is stored and the one before it published, and (unless the store was empty) looked up
// while the one before it is diffed, so Postgres and the ingest process each keep a core busy; at
// most one batch waits for each lane, so memory stays flat.
import type { Pool } from "@th/db";
import {
  advanceWatermark,
  dropSecondaryIndexes,
  insertNewParcels,
  loadRecordedSales,
  loadStatesToDiff,
  type PublishParcels,
  upsertParcels,
} from "../db/parcel-store.ts";
import type { NalRow, RollSale, RowResult } from "../domain/nal-row.ts";
import {
  type DiffOutcome,
  diffBatch,
  type FileContext,
  groupByFolio,
  NOTHING_STORED,
  type StoredStates,
} from "./batch-diff.ts";

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

/** A grouped batch whose parcels are being looked up. */
interface LookingUp {
  byFolio: ReadonlyMap<string, NalRow>;
  folios: readonly string[];
  found: Promise<[StoredStates, ReadonlyMap<string, RollSale[]>]>;
}

const NOTHING_STORING: ReadonlyMap<string, NalRow> = new Map();

export class ParcelPipeline {
  #storing: Promise<void> = Promise.resolve();
  /** The batch accepted last, looked up while the next one is read; diffed when that arrives. */
  #ahead: LookingUp | null = null;
  #publishing: Promise<void> = Promise.resolve();
  #storingFolios: ReadonlyMap<string, NalRow> = NOTHING_STORING;
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
   * Groups one batch of rows and starts looking its parcels up, then diffs the batch before it
   * and hands that to the store lane: a batch's lookup runs in Postgres while the next batch is
   * read, so neither waits for the other. A first load without recorded sales looks nothing up.
   * Only a batch that stores parcels can make a later batch's lookup stale, so a re-ingest of
   * unchanged rows checks nothing row by row.
   */
  async accept(results: readonly RowResult<NalRow>[]): Promise<void> {
    if (this.#storeError !== undefined) {
      throw this.#storeError;
    }
    this.#tally.counts.read += results.length;
    const byFolio = await groupByFolio(this.#file, results);
    if (byFolio.size === 0) {
      return;
    }
    const folios = [...byFolio.keys()];
    if (this.#state.firstLoad && !this.#state.sales) {
      // Nothing to look up: diffed at once, so its rows die before the young generation's next
      // collection instead of being copied and promoted while the next batch is read.
      await this.#diffAndStore(this.#lookUp(byFolio, folios, true));
      return;
    }
    const ahead = this.#ahead;
    this.#ahead = null;
    const diffs = !this.#state.firstLoad;
    // A parcel the store lane may still be writing must be looked up once it is written.
    if (diffs && this.#storingHolds(folios)) {
      if (ahead !== null) {
        await this.#diffAndStore(ahead);
      }
      await this.#storing;
      this.#ahead = this.#lookUp(byFolio, folios, false);
      return;
    }
    let lookingUp = this.#lookUp(byFolio, folios, this.#state.firstLoad);
    if (ahead !== null) {
      await this.#diffAndStore(ahead);
      // The batch before stores one of this batch's parcels (a parcel the file repeats): this
      // lookup may have read the store before that write, so it is done again after it.
      if (diffs && this.#storingHolds(folios)) {
        await this.#storing;
        lookingUp = this.#lookUp(byFolio, folios, false);
      }
    }
    this.#ahead = lookingUp;
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

  /** Starts looking a batch's parcels up: their stored states and their recorded sales. */
  #lookUp(
    byFolio: ReadonlyMap<string, NalRow>,
    folios: readonly string[],
    skipStates: boolean,
  ): LookingUp {
    const sales = this.#state.sales;
    const found = Promise.all([
      skipStates ? NOTHING_STORED : this.#loadStates(byFolio, folios),
      sales ? loadRecordedSales(this.#pool, folios) : new Map<string, RollSale[]>(),
    ]);
    // Awaited when the batch is diffed; a failure meanwhile is no unhandled rejection.
    found.catch(() => {});
    return { byFolio, folios, found };
  }

  #loadStates(byFolio: ReadonlyMap<string, NalRow>, folios: readonly string[]) {
    const digests: (string | null)[] = [];
    const lines: number[] = [];
    for (const folio of folios) {
      const row = byFolio.get(folio) as NalRow;
      digests.push(row.digest);
      lines.push(row.line);
    }
    return loadStatesToDiff(
      this.#pool,
      { folios, digests, lines },
      this.#file.sourceFileId,
      this.#state.sales,
    );
  }

  /** Diffs a looked-up batch and hands it to the store lane once the one before is stored. */
  async #diffAndStore(batch: LookingUp): Promise<void> {
    const diffed = await this.#diff(batch);
    await this.#tally.timed("waitStore", () => this.#storing);
    // A batch that stores nothing (all unchanged) changes no state a later lookup reads.
    this.#storingFolios = diffed.batch.size > 0 ? batch.byFolio : NOTHING_STORING;
    this.#storing = this.#store(batch.byFolio, batch.folios, diffed);
    this.#storing.catch((error: unknown) => {
      this.#storeError ??= error;
    });
  }

  async #diff(batch: LookingUp): Promise<DiffOutcome> {
    const [states, sales] = await this.#tally.timed("read", () => batch.found);
    return this.#tally.timed("diff", () => diffBatch(this.#file, batch.byFolio, states, sales));
  }

  /**
   * Stores a diffed batch once every earlier batch is stored, then hands its events to the
   * publisher. On a first load every parcel is taken for new without a lookup; should the file
   * repeat a parcel of an earlier batch, nothing of the batch is stored and it is looked up and
   * diffed again against what is stored now.
   */
  async #store(
    byFolio: ReadonlyMap<string, NalRow>,
    folios: readonly string[],
    diffed: DiffOutcome,
  ): Promise<void> {
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
        outcome = await this.#diff(this.#lookUp(byFolio, folios, false));
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
