import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { basename } from "node:path";
import type { RollStage } from "@th/contracts";
import type { Pool } from "@th/db";
import { inSpan } from "@th/telemetry";
import { recordIngestFinished, recordIngestStarted } from "../db/ingest-runs.ts";
import {
  ensureSecondaryIndexes,
  type PublishParcels,
  publishPending,
  registerRecordSchema,
  storeContents,
  upsertRecordedSales,
  withIngestLock,
} from "../db/parcel-store.ts";
import { CsvReader, type CsvRecord, fieldValues, type RecordSink } from "../domain/csv.ts";
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
import { NalRowReader, type RowResult, SdfRowReader, type SdfSale } from "../domain/nal-row.ts";
import { folioOf } from "../domain/parcel.ts";
import { rowDigestContext } from "../domain/row-digest.ts";
import { Utf8Chunks } from "../domain/utf8-chunks.ts";
import type { FileContext } from "./batch-diff.ts";
import { IngestTally, ParcelPipeline } from "./parcel-pipeline.ts";
import { RejectsReport } from "./rejects-report.ts";
import { RollRows } from "./roll-rows.ts";
import { headerLacks, type RowBatches, rowBatches, typedBy } from "./row-batches.ts";

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

function ingestIdOf(file: string, rollStage: RollStage): string {
  const named = parseRollFileName(basename(file));
  const source = named
    ? `${named.year}${rollStage === "final" ? "F" : "P"}_${named.countyNo}_${String(named.submission).padStart(2, "0")}`
    : "file";
  return `ing_${source}_${Date.now().toString(36)}${randomBytes(2).toString("hex")}`;
}

/** The file's parcels, what the store held when it began and where its rejects go. */
async function openFile(
  deps: IngestDeps,
  file: string,
  options: IngestOptions,
  report: RejectsReport,
): Promise<{
  context: FileContext;
  totalBytes: number;
  pipeline: ParcelPipeline;
  tally: IngestTally;
}> {
  const now = options.now ?? (() => new Date());
  const named = parseRollFileName(basename(file));
  const rollStage: RollStage = options.rollStage ?? named?.stage ?? "final";
  const totalBytes = (await stat(file)).size;
  const context: FileContext = {
    ingestId: ingestIdOf(file, rollStage),
    sourceFile: basename(file),
    sourceFileId: `${basename(file)}:${totalBytes}`,
    rollStage,
    asOf: options.asOf ?? now(),
    schemaId: await registerRecordSchema(deps.pool),
    countyNo: named?.countyNo ?? null,
    now,
    reject: (reject) => report.add(reject),
  };
  await recordIngestStarted(deps.pool, context.ingestId, basename(file), now());
  // The ingest lock keeps the store as it was seen here: nobody else writes parcels or sales.
  const stored = await storeContents(deps.pool);
  const tally = new IngestTally();
  const pipeline = new ParcelPipeline(deps.pool, deps.publish, context, tally, {
    firstLoad: !stored.parcels || options.takeForNew === true,
    sales: stored.sales,
    deferIndexes:
      options.indexesBuiltByCaller === true ||
      (!stored.parcels &&
        totalBytes >= (options.deferIndexesFromBytes ?? DEFER_INDEXES_FROM_BYTES)),
    watermarkByCaller: options.lockHeldByCaller === true,
  });
  return { context, totalBytes, pipeline, tally };
}

/** How a file's records become rows: set by its header, which picks the row reader. */
interface FileShape {
  kind: "NAL" | "SDF";
  rows: RowBatches;
  /** Set when the header lacks a column a lead is built from: every row is skipped, reported. */
  unloadable: string | null;
  /** The header was a row: a header-less sales file. */
  headerIsRow: boolean;
  /** Lines are split only as far as their fields are read (rows keyed, not typed). */
  splitOnDemand: boolean;
}

/** Maps the header's columns, reports drift, and picks the row reader and where rows go. */
function shapeOf(
  file: string,
  header: CsvRecord,
  rollStage: RollStage,
  batchSize: number,
  report: RejectsReport,
  store: { parcels: ParcelPipeline; sales: (rows: readonly RowResult<SdfSale>[]) => Promise<void> },
): FileShape {
  const names = fieldValues(header.fields);
  const kind = detectKind(file, names);
  if (kind === "SDF") {
    const fields = looksLikeHeader(names) ? names : [...SDF_COLUMNS];
    const map = mapHeader(fields, SDF_COLUMNS, SDF_COLUMN_ALIASES, SDF_REQUIRED_COLUMNS);
    for (const reject of headerDriftRejects(map)) {
      report.add(reject);
    }
    const unloadable = headerLacks(map.missingRequired);
    const reader = typedBy(unloadable, new SdfRowReader(map));
    return {
      kind,
      unloadable,
      rows: rowBatches(batchSize, reader, store.sales),
      headerIsRow: fields !== names,
      splitOnDemand: false,
    };
  }
  const map = mapHeader(names, NAL_COLUMNS, NAL_COLUMN_ALIASES, NAL_REQUIRED_COLUMNS);
  for (const reject of headerDriftRejects(map)) {
    report.add(reject);
  }
  const unloadable = headerLacks(map.missingRequired);
  const rows = new RollRows(unloadable, new NalRowReader(map), rowDigestContext(names, rollStage));
  // A diff types a row only if the store does not hold the parcel built from it already.
  const take = store.parcels.typesLate
    ? (record: CsvRecord) => rows.late(record)
    : (record: CsvRecord) => rows.typed(record);
  return {
    kind,
    unloadable,
    rows: rowBatches(batchSize, take, (batch) => store.parcels.accept(batch)),
    headerIsRow: false,
    splitOnDemand: store.parcels.typesLate,
  };
}

/** Stores a batch of sales rows; the last row of a sale in the batch wins. */
async function storeSales(
  pool: Pool,
  results: readonly RowResult<SdfSale>[],
  tally: IngestTally,
  report: RejectsReport,
): Promise<void> {
  const byKey = new Map<string, SdfSale & { folio: string }>();
  for (const result of results) {
    tally.counts.read += 1;
    if (!result.ok) {
      report.add(result.reject);
      continue;
    }
    const folio = folioOf(result.row.countyNo, result.row.parcelId);
    byKey.set(`${folio}\u0000${result.row.saleId}`, { ...result.row, folio });
  }
  const sales = [...byKey.values()];
  const { inserted, updated } = await upsertRecordedSales(pool, sales);
  tally.counts.new += inserted;
  tally.counts.changed += updated;
  tally.counts.unchanged += sales.length - inserted - updated;
}

/**
 * Reads `file` record by record into the shape its header sets, handing full batches to the
 * store one at a time. Resolves once every batch was handed over and the last one returned.
 */
async function readRecords(
  file: string,
  shapeFor: (header: CsvRecord) => FileShape,
  onChunk: (bytesRead: number, shape: FileShape | undefined) => void,
): Promise<FileShape | undefined> {
  const csv = new CsvReader();
  let shape: FileShape | undefined;
  let inflight: Promise<void> = Promise.resolve();
  const sink: RecordSink = {
    push(record) {
      if (shape === undefined) {
        shape = shapeFor(record);
        csv.splitOnDemand = shape.splitOnDemand;
        // The first record is the header, but in a header-less sales file it is a row too.
        if (!shape.headerIsRow) {
          return;
        }
      }
      shape.rows.add(record);
    },
  };
  const flush = async (all: boolean) => {
    for (const store of shape?.rows.take(all) ?? []) {
      await inflight;
      inflight = store();
      // Surface a failure at the next await instead of as an unhandled rejection.
      inflight.catch(() => {});
    }
  };
  let bytesRead = 0;
  const text = new Utf8Chunks();
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) {
    bytesRead += (chunk as Buffer).length;
    csv.push(text.text(chunk as Buffer), sink);
    await flush(false);
    onChunk(bytesRead, shape);
  }
  const rest = text.end();
  if (rest.length > 0) {
    csv.push(rest, sink);
  }
  csv.end(sink);
  await flush(true);
  await inflight;
  return shape;
}

async function ingestLocked(
  deps: IngestDeps,
  file: string,
  options: IngestOptions,
): Promise<Omit<IngestSummary, "traceId">> {
  const started = performance.now();
  const report = new RejectsReport(
    options.rejectsPath === undefined ? `${file}.rejects.csv` : options.rejectsPath,
  );
  const { context, totalBytes, pipeline, tally } = await openFile(deps, file, options, report);
  const buildIndexes = () => ensureSecondaryIndexes(deps.pool);
  let shape: FileShape | undefined;
  try {
    shape = await readRecords(
      file,
      (header) =>
        shapeOf(file, header, context.rollStage, options.batchSize ?? 2000, report, {
          parcels: pipeline,
          sales: (rows) => storeSales(deps.pool, rows, tally, report),
        }),
      (bytesRead, current) =>
        options.onProgress?.({
          rowsRead: tally.counts.read + (current?.rows.waiting() ?? 0),
          bytesRead,
          totalBytes,
        }),
    );
    await pipeline.stored();
    if (pipeline.indexesDropped && !options.indexesBuiltByCaller) {
      // Built while the last batch is being published.
      await tally.timed("index", buildIndexes);
    }
    await pipeline.published();
    options.onProgress?.({ rowsRead: tally.counts.read, bytesRead: totalBytes, totalBytes });
  } finally {
    // On failure, let outstanding work settle before the ingest lock is released, and leave the
    // store with its indexes (or to the caller that builds them).
    await pipeline.settle();
    if (pipeline.indexesDropped && !options.indexesBuiltByCaller) {
      await buildIndexes().catch(() => {});
    }
    await report.close();
  }
  const kind = shape?.kind ?? "NAL";
  const counts = tally.counts;
  await recordIngestFinished(deps.pool, context.ingestId, {
    kind,
    finishedAt: context.now(),
    read: counts.read,
    new: counts.new,
    changed: counts.changed,
    unchanged: counts.unchanged,
    rejected: report.count,
  });
  return {
    ingestId: context.ingestId,
    file,
    kind,
    read: counts.read,
    new: counts.new,
    changed: counts.changed,
    unchanged: counts.unchanged,
    rejected: report.rowRejects(),
    rejects: report.kept,
    rejectsPath: report.count > 0 ? report.path : null,
    unloadable: shape === undefined ? "the file is empty" : shape.unloadable,
    published: counts.published,
    storedThrough: counts.storedThrough,
    stageMs: tally.stageMs,
    seconds: (performance.now() - started) / 1000,
  };
}
