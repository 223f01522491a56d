import { decodeValue, type EncodedRecords, encodeValue } from "@th/bus";
import {
  contracts,
  type ParcelIngested,
  type RollStage,
  SCHEMA_HEADER,
  schemaHeaderValue,
} from "@th/contracts";
import {
  binaryCopyStream,
  CopyBinary,
  copyChunks,
  inTransaction,
  type Pool,
  type PoolClient,
} from "@th/db";
import type { ParcelDetail } from "../domain/lead.ts";
import type { RollSale, SdfSale } from "../domain/nal-row.ts";
import type { BuiltParcel, StoredParcelState } from "../domain/parcel.ts";
import { ParcelRecords } from "./parcel-record.ts";

export interface StoredParcel {
  event: ParcelIngested;
  detail: ParcelDetail;
}

/**
 * How a parcel's `parcel.ingested` record is stored: the Avro bytes as published with their
 * writer schema, or, for parcels stored before records were, the event as JSON text. Select them
 * with `STORED_EVENT_COLUMNS`.
 */
export interface StoredEventColumns {
  record: Buffer | null;
  record_schema: string | null;
  event: string | null;
}

/** The stored record, read into the current schema whatever schema it was written with. */
export function storedEvent(row: StoredEventColumns): ParcelIngested {
  if (row.record !== null && row.record_schema !== null) {
    return decodeValue(contracts.parcelIngested, row.record, {
      [SCHEMA_HEADER]: row.record_schema,
    });
  }
  if (row.event === null) {
    throw new Error("a parcel row holds neither its record nor its event");
  }
  return JSON.parse(row.event) as ParcelIngested;
}

/**
 * New and changed parcels made ready for the store and the topic as each is built: its
 * `parcel.ingested` record encoded once (the bytes stored are the bytes published) and its row
 * rendered as COPY text. The parcel's objects then die young, while the batch waits for the store
 * as bytes the garbage collector never copies.
 */
export class ParcelBatch {
  /** Each parcel's folio, the key it is published under, in the order added. */
  readonly folios: string[] = [];
  readonly #records: ParcelRecords;
  /** Rows of parcels not stored yet, and of parcels stored already. */
  readonly #fresh = new CopyBinary();
  readonly #known = new CopyBinary();
  readonly #schemaId: number;

  /**
   * `schemaId`: the id of this version's record schema (`registerRecordSchema`); `expected`: about
   * how many parcels the batch will hold, so their records' buffer is allocated once.
   */
  constructor(schemaId: number, expected?: number) {
    this.#schemaId = schemaId;
    this.#records = new ParcelRecords(expected);
  }

  /** Adds a parcel; `stored` when the store holds it already (it then takes the upsert). */
  add(parcel: BuiltParcel, stored: boolean): void {
    const record = this.#records.add(parcel.event);
    writeStageRow(stored ? this.#known : this.#fresh, parcel, record, this.#schemaId);
    this.folios.push(parcel.event.folio);
  }

  get size(): number {
    return this.folios.length;
  }

  /** The records to publish, as stored. */
  records(): EncodedRecords<ParcelIngested> {
    return { contract: contracts.parcelIngested, keys: this.folios, values: this.#records.views() };
  }

  /**
   * The rows as binary COPY data: of parcels not stored yet, and of parcels stored already. They
   * are handed out once (a batch is stored once; a batch that must be built again is a new one).
   */
  rows(): { fresh: Buffer[]; known: Buffer[] } {
    return { fresh: this.#fresh.take(true), known: this.#known.take(true) };
  }
}

/**
 * The columns of `StoredEventColumns` in a select from `parcels`: the schema id resolved per
 * returned row, which leaves the plan of the query around it as it was.
 */
export const STORED_EVENT_COLUMNS =
  "record, (SELECT header FROM record_schemas WHERE id = record_schema) AS record_schema, event";

/** The schema header of every record stored by this version. */
const RECORD_SCHEMA = schemaHeaderValue(contracts.parcelIngested);

/**
 * The id of this version's record schema in `record_schemas`, registered on first use; ids are
 * never reused, so a writer resolves it once. It is looked up before any insert: an `INSERT ...
 * ON CONFLICT` takes an id even when it conflicts, and one per stored batch would run through the
 * smallint ids in a few statewide loads.
 */
export async function registerRecordSchema(db: Pool | PoolClient): Promise<number> {
  for (;;) {
    const result = await db.query<{ id: number }>(
      `WITH found AS (SELECT id FROM record_schemas WHERE header = $1),
            registered AS (
              INSERT INTO record_schemas (header)
              SELECT $1 WHERE NOT EXISTS (SELECT 1 FROM found)
              ON CONFLICT (header) DO NOTHING
              RETURNING id
            )
       SELECT id FROM found UNION ALL SELECT id FROM registered`,
      [RECORD_SCHEMA],
    );
    const id = result.rows[0]?.id;
    // No row: another writer registered it between the lookup and the insert; look again.
    if (id !== undefined) {
      return id;
    }
  }
}

/** One advisory lock serialises every writer of parcels, so change_seq order is commit order. */
const INGEST_LOCK = "hashtext('parcels.ingest')";

/** Runs `work` while holding the ingest lock; waits for another ingest to finish first. */
export async function withIngestLock<T>(pool: Pool, work: () => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query(`SELECT pg_advisory_lock(${INGEST_LOCK})`);
    try {
      return await work();
    } finally {
      await client.query(`SELECT pg_advisory_unlock(${INGEST_LOCK})`).catch(() => {});
    }
  } finally {
    client.release();
  }
}

/** Like `withIngestLock`, but gives up at once (returns null) when an ingest holds the lock. */
export async function tryWithIngestLock<T>(
  pool: Pool,
  work: () => Promise<T>,
): Promise<{ value: T } | null> {
  const client = await pool.connect();
  try {
    const result = await client.query<{ locked: boolean }>(
      `SELECT pg_try_advisory_lock(${INGEST_LOCK}) AS locked`,
    );
    if (!result.rows[0]?.locked) {
      return null;
    }
    try {
      return { value: await work() };
    } finally {
      await client.query(`SELECT pg_advisory_unlock(${INGEST_LOCK})`).catch(() => {});
    }
  } finally {
    client.release();
  }
}

/** A batch's rows as their lookup is given them, by index: folio, digest and line. */
export interface BatchKeys {
  folios: readonly string[];
  digests: readonly (string | null)[];
  lines: readonly number[];
}

/**
 * The stored state of each parcel of a batch its diff must look at, by folio, null for a parcel
 * not stored. A parcel is left out when its stored row is the batch's row for it, told by the
 * row's digest (decision 0160): the same digest (neither of them null), the stored record no
 * other line of file `fileId`, and, once sales are recorded, none recorded for it. Its facts are then the stored
 * ones and the diff counts it unchanged without a look: a re-ingest of an unchanged roll reads
 * nothing back. The batch goes as JSON arrays (serialized natively, where an array parameter is
 * escaped element by element), and rows come as arrays, not objects.
 */
export async function loadStatesToDiff(
  db: Pool | PoolClient,
  keys: BatchKeys,
  fileId: string,
  salesRecorded: boolean,
): Promise<Map<string, StoredParcelState | null>> {
  const result = await db.query<StateRow>({
    text: `SELECT b.folio, p.folio IS NOT NULL, p.content_hash, p.roll_year, p.roll_stage,
                  p.homestead, p.just_value, p.prior_roll_year, p.prior_homestead,
                  p.prior_just_value, p.source_file_id, p.source_line, p.source_seq_no
             FROM ROWS FROM (json_array_elements_text($1::json), json_array_elements_text($2::json),
                             json_array_elements_text($3::json)) AS b (folio, digest, line)
             LEFT JOIN parcels p ON p.folio = b.folio
            WHERE p.folio IS NULL
               OR p.row_digest IS NULL OR p.row_digest IS DISTINCT FROM b.digest
               OR (p.source_file_id = $4 AND p.source_line <> b.line::integer)
               ${salesRecorded ? "OR EXISTS (SELECT 1 FROM recorded_sales s WHERE s.folio = b.folio)" : ""}`,
    values: [
      JSON.stringify(keys.folios),
      JSON.stringify(keys.digests),
      JSON.stringify(keys.lines),
      fileId,
    ],
    rowMode: "array",
  });
  const states = new Map<string, StoredParcelState | null>();
  for (const row of result.rows) {
    states.set(row[0], row[1] ? stateOf(row) : null);
  }
  return states;
}

/** One row of `loadStatesToDiff`, column by column. */
type StateRow = [
  folio: string,
  stored: boolean,
  contentHash: string,
  rollYear: number,
  rollStage: RollStage,
  homestead: boolean,
  justValue: string,
  priorRollYear: number | null,
  priorHomestead: boolean | null,
  priorJustValue: string | null,
  sourceFileId: string | null,
  sourceLine: number | null,
  sourceSeqNo: number | null,
];

/** The state of a stored parcel, from its row of `loadStatesToDiff`. */
function stateOf([
  ,
  ,
  contentHash,
  rollYear,
  rollStage,
  homestead,
  justValue,
  priorRollYear,
  priorHomestead,
  priorJustValue,
  sourceFileId,
  sourceLine,
  sourceSeqNo,
]: StateRow): StoredParcelState {
  return {
    contentHash,
    rollYear,
    rollStage,
    homestead,
    justValue: Number(justValue),
    priorRoll:
      priorRollYear === null
        ? null
        : {
            rollYear: priorRollYear,
            homestead: priorHomestead ?? false,
            justValue: Number(priorJustValue ?? 0),
          },
    source:
      sourceFileId === null || sourceLine === null
        ? null
        : { fileId: sourceFileId, line: sourceLine, seqNo: sourceSeqNo },
  };
}

interface SaleRow {
  folio: string;
  price: string;
  sale_year: number;
  sale_month: number;
  qualification_code: string | null;
  vacant_or_improved: string | null;
  multi_parcel: boolean;
}

/** SDF sales recorded for each of `folios`; empty for parcels without any. */
export async function loadRecordedSales(
  db: Pool | PoolClient,
  folios: readonly string[],
): Promise<Map<string, RollSale[]>> {
  const result = await db.query<SaleRow>(
    `SELECT folio, price, sale_year, sale_month, qualification_code, vacant_or_improved,
            multi_parcel
       FROM recorded_sales WHERE folio = ANY($1::text[])`,
    [folios],
  );
  const sales = new Map<string, RollSale[]>();
  for (const row of result.rows) {
    const list = sales.get(row.folio) ?? [];
    list.push({
      price: Number(row.price),
      year: row.sale_year,
      month: row.sale_month,
      qualificationCode: row.qualification_code,
      vacantOrImproved: row.vacant_or_improved,
      multiParcel: row.multi_parcel,
    });
    sales.set(row.folio, list);
  }
  return sales;
}

export function detailOf(parcel: BuiltParcel): ParcelDetail {
  const equity = parcel.equity;
  return {
    signals: parcel.signals,
    equity:
      equity === null
        ? null
        : {
            est_loan_balance: equity.estLoanBalance,
            rate_pct: equity.ratePct,
            basis: {
              price: equity.basis.price,
              year: equity.basis.year,
              month: equity.basis.month,
              qualification_code: equity.basis.qualificationCode,
            },
          },
  };
}

const STAGE_COLUMNS = `folio, county_no, parcel_id, roll_year, roll_stage, content_hash, situs_city,
  situs_zip5, use_class, homestead, just_value, est_equity, signals, prior_roll_year,
  prior_homestead, prior_just_value, record, record_schema, detail, source_file_id, source_line,
  source_seq_no, row_digest`;

/** One row of `STAGE_COLUMNS`, each value of its column's type. */
function writeStageRow(
  rows: CopyBinary,
  parcel: BuiltParcel,
  record: Buffer,
  schemaId: number,
): void {
  const event = parcel.event;
  const prior = parcel.priorRoll;
  const source = parcel.source;
  rows
    .row(23)
    .text(event.folio)
    .int16(event.county_no)
    .text(event.parcel_id)
    .int16(event.roll_year)
    .text(event.roll_stage)
    .text(event.content_hash)
    .text(parcel.situsCity)
    .text(parcel.situsZip5)
    .text(event.land_use.use_class)
    .bool(event.homestead)
    .int64(event.valuation.just_value)
    .int64(event.valuation.est_equity)
    .textArray(event.signals_fired)
    .int16(prior?.rollYear ?? null)
    .bool(prior?.homestead ?? null)
    .int64(prior?.justValue ?? null)
    .bytes(record)
    .int16(schemaId)
    .text(JSON.stringify(detailOf(parcel)))
    .text(source?.fileId ?? null)
    .int32(source?.line ?? null)
    .int32(source?.seqNo ?? null)
    .text(parcel.rowDigest);
}

/**
 * Stores a batch in one transaction, sending its rows as binary COPY data (the unnest of
 * eighteen parameter arrays this replaced spent most of its time serialising and re-parsing array
 * literals of escaped JSON, and COPY text had the server split and unescape every line and decode
 * each record from hex). Parcels not stored yet are copied straight into the table; the ones stored
 * already go through a session-local staging table and one INSERT ... ON CONFLICT. Should one of
 * the "new" ones have been stored meanwhile, the whole batch takes the upsert. Each row takes a
 * fresh change_seq; returns the highest.
 */
export async function upsertParcels(db: Pool | PoolClient, batch: ParcelBatch): Promise<number> {
  if (batch.size === 0) {
    return 0;
  }
  const { fresh, known } = batch.rows();
  const client = "release" in db ? db : await db.connect();
  try {
    try {
      return await storeInTransaction(client, fresh, known);
    } catch (error) {
      if ((error as { code?: string }).code === "23505" && fresh.length > 0) {
        return await storeInTransaction(client, [], [...fresh, ...known]);
      }
      throw error;
    }
  } finally {
    if (client !== db) {
      client.release();
    }
  }
}

async function storeInTransaction(
  client: PoolClient,
  fresh: readonly Buffer[],
  known: readonly Buffer[],
): Promise<number> {
  await client.query("BEGIN");
  try {
    if (fresh.length > 0) {
      await copyChunks(
        client,
        `COPY parcels (${STAGE_COLUMNS}) FROM STDIN (FORMAT binary)`,
        binaryCopyStream(fresh),
      );
    }
    if (known.length > 0) {
      await client.query(
        `CREATE TEMP TABLE IF NOT EXISTS parcels_stage (
           folio text, county_no smallint, parcel_id text, roll_year smallint, roll_stage text,
           content_hash text, situs_city text, situs_zip5 text, use_class text, homestead boolean,
           just_value bigint, est_equity bigint, signals text[], prior_roll_year smallint,
           prior_homestead boolean, prior_just_value bigint, record bytea, record_schema smallint,
           detail text,
           source_file_id text, source_line integer, source_seq_no integer, row_digest text
         ) ON COMMIT DELETE ROWS`,
      );
      await copyChunks(
        client,
        `COPY parcels_stage (${STAGE_COLUMNS}) FROM STDIN (FORMAT binary)`,
        binaryCopyStream(known),
      );
      await client.query(
        `INSERT INTO parcels (${STAGE_COLUMNS})
         SELECT ${STAGE_COLUMNS} FROM parcels_stage
         ON CONFLICT (folio) DO UPDATE SET
           county_no = excluded.county_no, parcel_id = excluded.parcel_id,
           roll_year = excluded.roll_year, roll_stage = excluded.roll_stage,
           content_hash = excluded.content_hash, situs_city = excluded.situs_city,
           situs_zip5 = excluded.situs_zip5, use_class = excluded.use_class,
           homestead = excluded.homestead, just_value = excluded.just_value,
           est_equity = excluded.est_equity, signals = excluded.signals,
           prior_roll_year = excluded.prior_roll_year,
           prior_homestead = excluded.prior_homestead,
           prior_just_value = excluded.prior_just_value, event = NULL,
           record = excluded.record, record_schema = excluded.record_schema,
           detail = excluded.detail, source_file_id = excluded.source_file_id,
           source_line = excluded.source_line, source_seq_no = excluded.source_seq_no,
           row_digest = excluded.row_digest, change_seq = nextval('parcel_change_seq'),
           updated_at = now()`,
      );
    }
    // Every row of this transaction took its change_seq from this session, the last one highest.
    const result = await client.query<{ max_seq: string }>(
      "SELECT currval('parcel_change_seq') AS max_seq",
    );
    await client.query("COMMIT");
    return Number(result.rows[0]?.max_seq ?? 0);
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  }
}

/**
 * Copies a batch none of whose parcels is stored yet straight into the table, in one
 * transaction. Returns the highest change_seq, or null (nothing stored) when one of them was
 * stored after all, so the caller can look the stored ones up and build the batch again.
 */
export async function insertNewParcels(pool: Pool, batch: ParcelBatch): Promise<number | null> {
  if (batch.size === 0) {
    return 0;
  }
  const { fresh, known } = batch.rows();
  const client = await pool.connect();
  try {
    return await storeInTransaction(client, [...fresh, ...known], []);
  } catch (error) {
    if ((error as { code?: string }).code === "23505") {
      return null;
    }
    throw error;
  } finally {
    client.release();
  }
}

/** Whether the store holds no parcel and no recorded sale (a first load). */
export async function storeContents(
  db: Pool | PoolClient,
): Promise<{ parcels: boolean; sales: boolean }> {
  const result = await db.query<{ parcels: boolean; sales: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM parcels) AS parcels,
            EXISTS (SELECT 1 FROM recorded_sales) AS sales`,
  );
  return result.rows[0] ?? { parcels: true, sales: true };
}

/**
 * The parcel store's secondary indexes exactly as the migrations create them: lead reads by
 * PARCEL_ID, search by zip and signals (by county it reads the primary key), and the
 * publish-pending scan by change_seq. A first load drops them and builds them after its last
 * batch, in this order: the longest to build first (measured on a county's 200,000 rows: 170, 130,
 * 100 and 80 ms), so two lanes finish together.
 */
export const SECONDARY_INDEXES: readonly { name: string; definition: string }[] = [
  { name: "parcels_zip_folio", definition: "ON parcels (situs_zip5, folio)" },
  { name: "parcels_signals", definition: "ON parcels USING gin (signals)" },
  { name: "parcels_parcel_id", definition: "ON parcels (parcel_id)" },
  { name: "parcels_change_seq", definition: "ON parcels (change_seq)" },
];

/** Drops the secondary indexes ahead of a bulk first load into an empty store. */
export async function dropSecondaryIndexes(db: Pool | PoolClient): Promise<void> {
  await db.query(`DROP INDEX IF EXISTS ${SECONDARY_INDEXES.map((index) => index.name).join(", ")}`);
}

/**
 * Builds whichever secondary index is missing (after a first load, or after one that died before
 * building them), two at a time: the ingest's own work is done by then, so both cores build.
 * Returns how many were built.
 */
export async function ensureSecondaryIndexes(pool: Pool): Promise<number> {
  const present = await pool.query<{ indexname: string }>(
    "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'parcels'",
  );
  const have = new Set(present.rows.map((row) => row.indexname));
  const missing = SECONDARY_INDEXES.filter((index) => !have.has(index.name));
  if (missing.length === 0) {
    return 0;
  }
  const queue = [...missing];
  const lane = async () => {
    for (let index = queue.shift(); index; index = queue.shift()) {
      await inTransaction(pool, async (client) => {
        await client.query("SET LOCAL maintenance_work_mem = '128MB'");
        await client.query(`CREATE INDEX IF NOT EXISTS ${index.name} ${index.definition}`);
      });
    }
  };
  await Promise.all([lane(), lane()]);
  // Fresh statistics, or the planner keeps the empty table's and scans the whole store.
  await pool.query("ANALYZE parcels");
  return missing.length;
}

/** Records that every change up to `seq` is on the topic. */
export async function advanceWatermark(db: Pool | PoolClient, seq: number): Promise<void> {
  await db.query(
    "UPDATE publish_watermark SET published_through = greatest(published_through, $1)",
    [seq],
  );
}

/**
 * Sends `parcel.ingested` records, encoded ahead (they are stored as encoded); resolves once the
 * broker acknowledged them.
 */
export type PublishParcels = (records: EncodedRecords<ParcelIngested>) => Promise<void>;

/**
 * Publishes every stored change the topic has not confirmed (a crash between store and publish
 * leaves some), oldest first, advancing the watermark after each acknowledged batch. Call it
 * holding the ingest lock. Returns how many records went out.
 */
export async function publishPending(
  pool: Pool,
  publish: PublishParcels,
  batchSize = 2000,
): Promise<number> {
  let published = 0;
  for (;;) {
    const result = await pool.query<StoredEventColumns & { change_seq: string; folio: string }>(
      `SELECT change_seq, folio, ${STORED_EVENT_COLUMNS} FROM parcels
        WHERE change_seq > (SELECT published_through FROM publish_watermark)
        ORDER BY change_seq LIMIT $1`,
      [batchSize],
    );
    const last = result.rows.at(-1);
    if (!last) {
      return published;
    }
    await publish({
      contract: contracts.parcelIngested,
      keys: result.rows.map((row) => row.folio),
      // A record stored in the current schema goes out as stored; others are read and encoded.
      values: result.rows.map((row) =>
        row.record !== null && row.record_schema === RECORD_SCHEMA
          ? row.record
          : encodeValue(contracts.parcelIngested, storedEvent(row)),
      ),
    });
    await advanceWatermark(pool, Number(last.change_seq));
    published += result.rows.length;
  }
}

/**
 * Stores SDF sales; returns how many were new and how many changed (the rest were already
 * recorded exactly so).
 */
export async function upsertRecordedSales(
  db: Pool | PoolClient,
  sales: readonly (SdfSale & { folio: string })[],
): Promise<{ inserted: number; updated: number }> {
  if (sales.length === 0) {
    return { inserted: 0, updated: 0 };
  }
  const rows = sales.map((sale) => ({
    folio: sale.folio,
    sale_id: sale.saleId,
    price: sale.price,
    sale_year: sale.year,
    sale_month: sale.month,
    qualification_code: sale.qualificationCode,
    vacant_or_improved: sale.vacantOrImproved,
    multi_parcel: sale.multiParcel,
    or_book: sale.orBook,
    or_page: sale.orPage,
    clerk_no: sale.clerkNo,
  }));
  const result = await db.query<{ inserted: boolean }>(
    `INSERT INTO recorded_sales AS s (folio, sale_id, price, sale_year, sale_month,
                                      qualification_code, vacant_or_improved, multi_parcel,
                                      or_book, or_page, clerk_no)
     SELECT * FROM json_to_recordset($1::json) AS r(
       folio text, sale_id text, price bigint, sale_year smallint, sale_month smallint,
       qualification_code text, vacant_or_improved text, multi_parcel boolean, or_book text,
       or_page text, clerk_no text)
     ON CONFLICT (folio, sale_id) DO UPDATE SET
       price = excluded.price, sale_year = excluded.sale_year, sale_month = excluded.sale_month,
       qualification_code = excluded.qualification_code,
       vacant_or_improved = excluded.vacant_or_improved, multi_parcel = excluded.multi_parcel,
       or_book = excluded.or_book, or_page = excluded.or_page, clerk_no = excluded.clerk_no
     WHERE (s.price, s.sale_year, s.sale_month, s.qualification_code, s.vacant_or_improved,
            s.multi_parcel, s.or_book, s.or_page, s.clerk_no)
       IS DISTINCT FROM
           (excluded.price, excluded.sale_year, excluded.sale_month, excluded.qualification_code,
            excluded.vacant_or_improved, excluded.multi_parcel, excluded.or_book,
            excluded.or_page, excluded.clerk_no)
     RETURNING (xmax = 0) AS inserted`,
    [JSON.stringify(rows)],
  );
  const inserted = result.rows.filter((row) => row.inserted).length;
  return { inserted, updated: result.rows.length - inserted };
}
