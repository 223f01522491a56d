import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream, type WriteStream } from "node:fs";
import { stat } from "node:fs/promises";
import { basename } from "node:path";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import type { RollStage } from "@th/contracts";
import type { Pool } from "@th/db";
import { inSpan } from "@th/telemetry";
import {
  advanceWatermark,
  dropSecondaryIndexes,
  ensureSecondaryIndexes,
  insertNewParcels,
  loadRecordedSales,
  loadStates,
  ParcelBatch,
  type PublishParcels,
  publishPending,
  registerRecordSchema,
  storeContents,
  upsertParcels,
  upsertRecordedSales,
  withIngestLock,
} from "../db/parcel-store.ts";
import {
  CsvReader,
  type CsvRecord,
  type Fields,
  fieldValues,
  type RecordSink,
} from "../domain/csv.ts";
import { headerDriftRejects, looksLikeHeader, mapHeader, type Reject } from "../domain/header.ts";
import {
  NAL_COLUMN_ALIASES,
  NAL_COLUMNS,
  NAL_REQUIRED_COLUMNS,
  parseRollFileName,
  SDF_COLUMN_ALIASES,
  SDF_COLUMNS,
  SDF_REQUIRED_COLUMNS,
} from "../domain/nal-layout.ts";
import {
  type NalRow,
  NalRowReader,
  type RollSale,
  type RowResult,
  SdfRowReader,
  type SdfSale,
} from "../domain/nal-row.ts";
import {
  buildParcel,
  folioOf,
  isLaterRecord,
  isStaleRoll,
  type StoredParcelState,
  standingInFile,
} from "../domain/parcel.ts";

export type Publish = PublishParcels;

export interface IngestDeps {
  pool: Pool;
  /** Sends records to `parcel.ingested`; resolves once the broker acknowledged them. */
  publish: Publish;
}

export interface IngestProgress {
  rowsRead: number;
  bytesRead: number;
  totalBytes: number;
}

export interface IngestOptions {
  batchSize?: number;
  /** Reference date of tenure and loan-age arithmetic; defaults to now. */
  asOf?: Date;
  now?: () => Date;
  /** Overrides the stage read from the file name (NAL..P.. / NAL..F..). */
  rollStage?: RollStage;
  /** Where the rejects report goes; null writes none. Defaults to `<file>.rejects.csv`. */
  rejectsPath?: string | null;
  onProgress?: (progress: IngestProgress) => void;
  /**
   * A NAL file at least this large loaded into an empty store goes in without the secondary
   * indexes, which are built after its last batch (cheaper than maintaining them row by row).
   */
  deferIndexesFromBytes?: number;
  /**
   * The caller builds the secondary indexes after a run of several files into a store that was
   * empty when the run began (a statewide first load): this file goes in without them whatever
   * the store holds, and neither builds them before it nor after it.
   */
  indexesBuiltByCaller?: boolean;
  /**
   * The caller knows the store holds no parcel of this file (a county not loaded yet in a run
   * into an empty store): parcels are copied in as new without a lookup, as into an empty store.
   * A wrong guess costs time, not correctness: a batch holding a stored parcel falls back to the
   * lookup and the upsert.
   */
  takeForNew?: boolean;
  /**
   * The caller holds the ingest lock for a run that loads several files side by side (each
   * county's files in one lane, into a store that was empty when the run began): this ingest
   * takes no lock and runs no recovery publish, and leaves the watermark to the caller, which
   * moves it past `storedThrough` of every file once all of them are on the topic. Files loaded
   * side by side commit their change_seq values interleaved, so no one of them may move it.
   */
  lockHeldByCaller?: boolean;
}

export interface IngestSummary {
  ingestId: string;
  file: string;
  kind: "NAL" | "SDF";
  read: number;
  new: number;
  changed: number;
  unchanged: number;
  rejected: number;
  /** The first rejects, for display; the report file has them all. */
  rejects: Reject[];
  rejectsPath: string | null;
  /**
   * Why no row of the file could be loaded, when none could: the file is empty, or its header
   * lacks a column a lead is built from. Null when the file was read (rows rejected one by one
   * do not count here).
   */
  unloadable: string | null;
  published: number;
  /** The highest change_seq this ingest stored; 0 when it stored nothing. */
  storedThrough: number;
  seconds: number;
  /** The trace of the ingest span every published record carries; null when tracing is off. */
  traceId: string | null;
  /**
   * Wall-clock milliseconds of each stage. Stages overlap: the reader looks batches up (read)
   * and diffs them while the store lane stores the previous batch (store) after waiting for the
   * publish before it (publish); waitStore is how long the reader waited for the store lane,
   * index the secondary-index build after a first load.
   */
  stageMs: {
    read: number;
    diff: number;
    store: number;
    publish: number;
    index: number;
    waitStore: number;
  };
}

/** About 20,000 rows: below that the index build at the end costs about what it saves. */
const DEFER_INDEXES_FROM_BYTES = 10 << 20;

const NO_TRACE = "0".repeat(32);

const KEPT_REJECTS = 1000;

/**
 * The reader and the diff give the event loop a turn after this many rows. The store lane's
 * every step (COPY chunk taken, COPY done, commit) is a callback; run between batches only, it
 * waited for whole batches to be parsed and diffed, and Postgres sat idle meanwhile.
 */
const YIELD_EVERY_ROWS = 250;

/** Counts rows and says when the event loop is due a turn. */
class LoopTurns {
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

/** Collects rejects: keeps the first ones in memory, writes every one to the report file. */
class RejectsReport {
  readonly path: string | null;
  readonly kept: Reject[] = [];
  count = 0;
  #stream: WriteStream | undefined;

  constructor(path: string | null) {
    this.path = path;
  }

  add(reject: Reject): void {
    this.count += 1;
    if (this.kept.length < KEPT_REJECTS) {
      this.kept.push(reject);
    }
    if (this.path !== null) {
      if (!this.#stream) {
        this.#stream = createWriteStream(this.path);
        this.#stream.write("line,column,parcel_id,reason\n");
      }
      this.#stream.write(
        `${[reject.line, reject.column ?? "", reject.parcelId ?? "", reject.reason].map(csvCell).join(",")}\n`,
      );
    }
  }

  async close(): Promise<void> {
    const stream = this.#stream;
    if (stream) {
      await new Promise<void>((resolve, reject) =>
        stream.end((error?: Error | null) => (error ? reject(error) : resolve())),
      );
    }
  }
}

function csvCell(value: string | number): string {
  const text = String(value);
  return /[",\n\r]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function detectKind(file: string, header: readonly string[]): "NAL" | "SDF" {
  const named = parseRollFileName(basename(file));
  if (named) {
    return named.kind;
  }
  const names = new Set(header.map((name) => name.trim().toUpperCase()));
  return names.has("SALE_ID_CD") || (names.has("SALE_PRC") && !names.has("JV")) ? "SDF" : "NAL";
}

/**
 * Streams one NAL or SDF file into the parcel store. NAL rows are diffed by content hash against
 * the stored parcel; only new and changed parcels are stored and then published (store first,
 * publish second, watermark third: a crash anywhere republishes, never loses). Memory stays flat:
 * one batch is parsed and diffed while the previous one is being stored and the one before that
 * published. The whole ingest is one span (`ingest <file name>`), so every record it publishes
 * carries that trace.
 */
export async function ingestFile(
  deps: IngestDeps,
  file: string,
  options: IngestOptions = {},
): Promise<IngestSummary> {
  return inSpan(`ingest ${basename(file)}`, { "parcels.file": basename(file) }, async (span) => {
    // A caller holding the lock has run the recovery and builds the indexes for the whole run.
    const summary = options.lockHeldByCaller
      ? await ingestLocked(deps, file, options)
      : await withIngestLock(deps.pool, async () => {
          // A previous run may have died during a first load (indexes dropped) or after storing
          // changes it had not published yet.
          if (!options.indexesBuiltByCaller) {
            await ensureSecondaryIndexes(deps.pool);
          }
          await publishPending(deps.pool, deps.publish);
          return ingestLocked(deps, file, options);
        });
    span.setAttributes({
      "parcels.rows_read": summary.read,
      "parcels.rows_new": summary.new,
      "parcels.rows_changed": summary.changed,
      "parcels.published": summary.published,
    });
    const traceId = span.spanContext().traceId;
    return { ...summary, traceId: traceId === NO_TRACE ? null : traceId };
  });
}

async function ingestLocked(
  deps: IngestDeps,
  file: string,
  options: IngestOptions,
): Promise<Omit<IngestSummary, "traceId">> {
  const started = performance.now();
  const now = options.now ?? (() => new Date());
  const asOf = options.asOf ?? now();
  const batchSize = options.batchSize ?? 2000;
  const named = parseRollFileName(basename(file));
  const rollStage: RollStage = options.rollStage ?? named?.stage ?? "final";
  const ingestId = `ing_${named ? `${named.year}${rollStage === "final" ? "F" : "P"}_${named.countyNo}_${String(named.submission).padStart(2, "0")}` : "file"}_${Date.now().toString(36)}${randomBytes(2).toString("hex")}`;
  const report = new RejectsReport(
    options.rejectsPath === undefined ? `${file}.rejects.csv` : options.rejectsPath,
  );
  const totalBytes = (await stat(file)).size;
  const sourceFileId = `${basename(file)}:${totalBytes}`;
  const counts = { read: 0, new: 0, changed: 0, unchanged: 0, published: 0, storedThrough: 0 };
  const stageMs = { read: 0, diff: 0, store: 0, publish: 0, index: 0, waitStore: 0 };
  const timed = async <T>(stage: keyof typeof stageMs, work: () => Promise<T>): Promise<T> => {
    const begin = performance.now();
    try {
      return await work();
    } finally {
      stageMs[stage] += performance.now() - begin;
    }
  };
  let kind: "NAL" | "SDF" = "NAL";
  const schemaId = await registerRecordSchema(deps.pool);

  await deps.pool.query(
    "INSERT INTO ingest_runs (ingest_id, source_file, kind) VALUES ($1, $2, $3)",
    [ingestId, basename(file), "pending"],
  );

  /** Set by the header: types each record as read and batches the rows for the store. */
  let rows: RowBatches | undefined;
  /** Set when the header lacks a column a lead is built from: every row is skipped, reported. */
  let unloadable: string | null = null;
  let inflight: Promise<void> = Promise.resolve();
  let storing: Promise<void> = Promise.resolve();
  let publishing: Promise<void> = Promise.resolve();
  // The ingest lock keeps the store as it was seen here: nobody else writes parcels or sales.
  const stored = await storeContents(deps.pool);
  const load = {
    /**
     * The store held no parcel (or none of this file's, says the caller): every parcel is new
     * unless the file repeats it or the caller was wrong, which a failed copy reveals.
     */
    firstLoad: !stored.parcels || options.takeForNew === true,
    /** Sales were recorded: rolls are enriched with them. */
    sales: stored.sales,
    deferIndexes:
      options.indexesBuiltByCaller === true ||
      (!stored.parcels &&
        totalBytes >= (options.deferIndexesFromBytes ?? DEFER_INDEXES_FROM_BYTES)),
    indexesDropped: false,
    storingFolios: new Map<string, NalRow>() as ReadonlyMap<string, NalRow>,
    storeError: undefined as unknown,
  };

  /** Starts the header: maps columns, reports drift, and picks the row reader. */
  const onHeader = (header: CsvRecord, first: boolean) => {
    const names = fieldValues(header.fields);
    kind = detectKind(file, names);
    if (kind === "SDF") {
      const fields = first && looksLikeHeader(names) ? names : [...SDF_COLUMNS];
      const map = mapHeader(fields, SDF_COLUMNS, SDF_COLUMN_ALIASES, SDF_REQUIRED_COLUMNS);
      for (const reject of headerDriftRejects(map)) {
        report.add(reject);
      }
      unloadable = headerLacks(map.missingRequired);
      const reader = new SdfRowReader(map);
      rows = rowBatches(batchSize, typedBy(unloadable, reader), storeSales);
      return fields !== names;
    }
    const map = mapHeader(names, NAL_COLUMNS, NAL_COLUMN_ALIASES, NAL_REQUIRED_COLUMNS);
    for (const reject of headerDriftRejects(map)) {
      report.add(reject);
    }
    unloadable = headerLacks(map.missingRequired);
    rows = rowBatches(batchSize, typedBy(unloadable, new NalRowReader(map)), storeParcels);
    return false;
  };

  /** Diffs a batch against the stored states: the parcels to store and how each row counted. */
  const diffBatch = async (
    byFolio: ReadonlyMap<string, NalRow>,
    states: ReadonlyMap<string, StoredParcelState>,
    sales: ReadonlyMap<string, RollSale[]>,
  ) => {
    const started = performance.now();
    const observedAt = now().toISOString();
    const outcome = { batch: new ParcelBatch(schemaId), new: 0, updated: 0, unchanged: 0 };
    const turns = new LoopTurns();
    for (const [folio, row] of byFolio) {
      if (turns.due()) {
        await yieldToLoop();
      }
      const previous = states.get(folio) ?? null;
      // The file repeats this parcel in an earlier batch; the same rule as within a batch.
      const standing = standingInFile(previous?.source ?? null, sourceFileId, row);
      if (standing === "earlier") {
        report.add(duplicateReject(row, previous?.source?.line ?? row.line));
        continue;
      }
      if (isStaleRoll(previous, row.rollYear, rollStage)) {
        report.add({
          line: row.line,
          column: "ASMNT_YR",
          reason: `roll ${row.rollYear} ${rollStage} is older than the stored ${previous?.rollYear} ${previous?.rollStage} roll`,
          parcelId: row.parcelId,
        });
        continue;
      }
      const parcel = buildParcel(row, {
        ingestId,
        sourceFile: basename(file),
        sourceFileId,
        rollStage,
        observedAt,
        asOf,
        previous,
        recordedSales: sales.get(folio) ?? [],
      });
      if (standing === "later" && previous?.source) {
        // The stored record is an earlier one of this file: it is the duplicate, already counted
        // when it was stored. This row replaces it even when their content is the same, so the
        // store always holds the record that counts and a re-ingest reports the same duplicate.
        report.add(
          duplicateReject({ line: previous.source.line, parcelId: row.parcelId }, row.line),
        );
        outcome.batch.add(parcel, true);
        continue;
      }
      if (previous?.contentHash === parcel.event.content_hash) {
        outcome.unchanged += 1;
        continue;
      }
      if (previous) {
        outcome.updated += 1;
      } else {
        outcome.new += 1;
      }
      outcome.batch.add(parcel, previous !== null);
    }
    stageMs.diff += performance.now() - started;
    return outcome;
  };

  const lookUp = (folios: readonly string[], skipStates: boolean) =>
    timed("read", () =>
      Promise.all([
        skipStates ? new Map<string, StoredParcelState>() : loadStates(deps.pool, folios),
        load.sales ? loadRecordedSales(deps.pool, folios) : new Map<string, RollSale[]>(),
      ]),
    );

  /**
   * Stores a diffed batch once every earlier batch is stored, then hands its events to the
   * publisher. On a first load every parcel is taken for new without a lookup; should the file
   * repeat a parcel of an earlier batch, nothing of the batch is stored and it is looked up and
   * diffed again against what is stored now.
   */
  const storeBatch = async (
    byFolio: ReadonlyMap<string, NalRow>,
    folios: readonly string[],
    diffed: Awaited<ReturnType<typeof diffBatch>>,
  ) => {
    let outcome = diffed;
    if (outcome.batch.size > 0) {
      if (load.deferIndexes && !load.indexesDropped) {
        load.indexesDropped = true;
        await dropSecondaryIndexes(deps.pool);
      }
      let batch = outcome.batch;
      let maxSeq = load.firstLoad
        ? await timed("store", () => insertNewParcels(deps.pool, batch))
        : await timed("store", () => upsertParcels(deps.pool, batch));
      if (maxSeq === null) {
        const [stored, sales] = await lookUp(folios, false);
        outcome = await diffBatch(byFolio, stored, sales);
        const rebuilt = outcome.batch;
        batch = rebuilt;
        maxSeq = await timed("store", () => upsertParcels(deps.pool, rebuilt));
      }
      // This batch's publish runs while later batches are read, diffed and stored. At most one
      // publish is outstanding (memory stays flat), publishes go out in store order, and the
      // watermark only moves past a batch once it and every earlier one are on the topic.
      await timed("publish", () => publishing);
      // The records go out as stored.
      const records = batch.records();
      const through = maxSeq;
      counts.storedThrough = Math.max(counts.storedThrough, through);
      publishing = deps.publish(records).then(async () => {
        if (!options.lockHeldByCaller) {
          await advanceWatermark(deps.pool, through);
        }
        counts.published += records.values.length;
      });
      publishing.catch(() => {});
    }
    counts.new += outcome.new;
    counts.changed += outcome.updated;
    counts.unchanged += outcome.unchanged;
  };

  const storeParcels = async (results: readonly RowResult<NalRow>[]) => {
    if (load.storeError !== undefined) {
      throw load.storeError;
    }
    const byFolio = new Map<string, NalRow>();
    const turns = new LoopTurns();
    for (const result of results) {
      if (turns.due()) {
        await yieldToLoop();
      }
      counts.read += 1;
      if (!result.ok) {
        report.add(result.reject);
        continue;
      }
      if (named && result.row.countyNo !== named.countyNo) {
        // A county's file names its county; a row of another one is misplaced, not that
        // county's parcel, and would be stored under the other county's folio.
        report.add({
          line: result.row.line,
          column: "CO_NO",
          reason: `county ${result.row.countyNo} in a file of county ${named.countyNo}`,
          parcelId: result.row.parcelId,
        });
        continue;
      }
      const folio = folioOf(result.row.countyNo, result.row.parcelId);
      const earlier = byFolio.get(folio);
      if (earlier) {
        const keepLater = isLaterRecord(result.row, earlier);
        const [kept, dropped] = keepLater ? [result.row, earlier] : [earlier, result.row];
        report.add(duplicateReject(dropped, kept.line));
        if (!keepLater) {
          continue;
        }
      }
      byFolio.set(folio, result.row);
    }
    if (byFolio.size === 0) {
      return;
    }
    const folios = [...byFolio.keys()];
    // A parcel of the batch being stored must be diffed against what that batch stores.
    if (!load.firstLoad && folios.some((folio) => load.storingFolios.has(folio))) {
      await storing;
    }
    const [states, sales] = await lookUp(folios, load.firstLoad);
    const diffed = await diffBatch(byFolio, states, sales);
    // The next batch is parsed and diffed while this one is stored, so Postgres and this process
    // each keep a core busy; at most one batch waits for the store (memory stays flat).
    await timed("waitStore", () => storing);
    load.storingFolios = byFolio;
    storing = storeBatch(byFolio, folios, diffed);
    storing.catch((error: unknown) => {
      load.storeError ??= error;
    });
  };

  const storeSales = async (results: readonly RowResult<SdfSale>[]) => {
    const byKey = new Map<string, SdfSale & { folio: string }>();
    for (const result of results) {
      counts.read += 1;
      if (!result.ok) {
        report.add(result.reject);
        continue;
      }
      const folio = folioOf(result.row.countyNo, result.row.parcelId);
      byKey.set(`${folio}\u0000${result.row.saleId}`, { ...result.row, folio });
    }
    const sales = [...byKey.values()];
    const { inserted, updated } = await upsertRecordedSales(deps.pool, sales);
    counts.new += inserted;
    counts.changed += updated;
    counts.unchanged += sales.length - inserted - updated;
  };

  /** Hands full batches (every batch, at the end) to the store, one at a time. */
  const flush = async (all: boolean) => {
    for (const store of rows?.take(all) ?? []) {
      await inflight;
      inflight = store();
      // Surface a failure at the next await instead of as an unhandled rejection.
      inflight.catch(() => {});
    }
  };

  const csv = new CsvReader();
  let headerSeen = false;
  let bytesRead = 0;
  const sink: RecordSink = {
    push(record) {
      if (!headerSeen) {
        headerSeen = true;
        // The first record is the header, but in a header-less sales file it is a row too.
        if (!onHeader(record, true)) {
          return;
        }
      }
      rows?.add(record);
    },
  };

  try {
    const stream = createReadStream(file, { encoding: "utf8", highWaterMark: 1 << 20 });
    for await (const chunk of stream) {
      bytesRead += Buffer.byteLength(chunk as string);
      csv.push(chunk as string, sink);
      await flush(false);
      options.onProgress?.({
        rowsRead: counts.read + (rows?.waiting() ?? 0),
        bytesRead,
        totalBytes,
      });
    }
    csv.end(sink);
    await flush(true);
    await inflight;
    await storing;
    if (load.indexesDropped && !options.indexesBuiltByCaller) {
      // Built while the last batch is being published.
      await timed("index", () => ensureSecondaryIndexes(deps.pool));
    }
    await timed("publish", () => publishing);
    options.onProgress?.({ rowsRead: counts.read, bytesRead: totalBytes, totalBytes });
  } finally {
    // On failure, let outstanding work settle before the ingest lock is released, and leave the
    // store with its indexes (or to the caller that builds them).
    await storing.catch(() => {});
    await publishing.catch(() => {});
    if (load.indexesDropped && !options.indexesBuiltByCaller) {
      await ensureSecondaryIndexes(deps.pool).catch(() => {});
    }
    await report.close();
  }

  await deps.pool.query(
    `UPDATE ingest_runs SET kind = $2, finished_at = now(), rows_read = $3, rows_new = $4,
            rows_changed = $5, rows_unchanged = $6, rows_rejected = $7
      WHERE ingest_id = $1`,
    [ingestId, kind, counts.read, counts.new, counts.changed, counts.unchanged, report.count],
  );
  return {
    ingestId,
    file,
    kind,
    read: counts.read,
    new: counts.new,
    changed: counts.changed,
    unchanged: counts.unchanged,
    rejected: countRowRejects(report),
    rejects: report.kept,
    rejectsPath: report.count > 0 ? report.path : null,
    unloadable: headerSeen ? unloadable : "the file is empty",
    published: counts.published,
    storedThrough: counts.storedThrough,
    stageMs,
    seconds: (performance.now() - started) / 1000,
  };
}

/** Typed rows of one file, batched for the store. */
interface RowBatches {
  /** Types `record` into the pending batch. */
  add(record: CsvRecord): void;
  /** Rows typed and not handed to the store yet. */
  waiting(): number;
  /** Full batches, or with `all` every row left, each as its store step; each is taken once. */
  take(all: boolean): (() => Promise<void>)[];
}

/**
 * Batches rows typed as each record is read. A record's raw fields (165 strings on a roll row)
 * then live for one row: held until their batch was full, they outlived the young generation's
 * collections, which copied and promoted them (about a sixth of the ingest's CPU per row).
 */
function rowBatches<R>(
  batchSize: number,
  type: (record: CsvRecord) => RowResult<R>,
  store: (rows: readonly RowResult<R>[]) => Promise<void>,
): RowBatches {
  let pending: RowResult<R>[] = [];
  const full: RowResult<R>[][] = [];
  return {
    add(record) {
      pending.push(type(record));
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
 * header lacks a required column, becomes a reject.
 */
function typedBy<R>(
  unloadable: string | null,
  reader: { read(fields: Fields, line: number): RowResult<R> },
): (record: CsvRecord) => RowResult<R> {
  return (record) => {
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
    return reader.read(record.fields, record.line);
  };
}

/** Why a file's rows cannot be loaded when its header lacks required columns; null when none. */
function headerLacks(missing: readonly string[]): string | null {
  return missing.length > 0 ? `the header lacks ${missing.join(", ")}` : null;
}

/** The report line of a record dropped because its file holds a later one of the same parcel. */
function duplicateReject(dropped: { line: number; parcelId: string }, keptLine: number): Reject {
  return {
    line: dropped.line,
    column: "PARCEL_ID",
    reason: `duplicate parcel in file; kept line ${keptLine}`,
    parcelId: dropped.parcelId,
  };
}

/** Rows rejected; header-drift lines (line 1) are reported but are not rows. */
function countRowRejects(report: RejectsReport): number {
  return report.count - report.kept.filter((reject) => reject.line === 1).length;
}
