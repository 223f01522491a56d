import type { ParcelIngested, RollStage } from "@th/contracts";
import type { Pool, PoolClient } from "@th/db";
import type { RollSale, SdfSale } from "../domain/nal-row.ts";
import type { BuiltParcel, StoredParcelState } from "../domain/parcel.ts";
import type { FiredSignal } from "../domain/signals.ts";

/** Everything a lead read needs beyond the published record. */
export interface ParcelDetail {
  signals: FiredSignal[];
  equity: {
    est_loan_balance: number;
    rate_pct: number;
    basis: { price: number; year: number; month: number; qualification_code: string | null };
  } | null;
}

export interface StoredParcel {
  event: ParcelIngested;
  detail: ParcelDetail;
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

interface StateRow {
  folio: string;
  content_hash: string;
  roll_year: number;
  roll_stage: RollStage;
  homestead: boolean;
  just_value: string;
  prior_roll_year: number | null;
  prior_homestead: boolean | null;
  prior_just_value: string | null;
}

/** The stored state of each of `folios` that exists. */
export async function loadStates(
  db: Pool | PoolClient,
  folios: readonly string[],
): Promise<Map<string, StoredParcelState>> {
  const result = await db.query<StateRow>(
    `SELECT folio, content_hash, roll_year, roll_stage, homestead, just_value,
            prior_roll_year, prior_homestead, prior_just_value
       FROM parcels WHERE folio = ANY($1::text[])`,
    [folios],
  );
  const states = new Map<string, StoredParcelState>();
  for (const row of result.rows) {
    states.set(row.folio, {
      contentHash: row.content_hash,
      rollYear: row.roll_year,
      rollStage: row.roll_stage,
      homestead: row.homestead,
      justValue: Number(row.just_value),
      priorRoll:
        row.prior_roll_year === null
          ? null
          : {
              rollYear: row.prior_roll_year,
              homestead: row.prior_homestead ?? false,
              justValue: Number(row.prior_just_value ?? 0),
            },
    });
  }
  return states;
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

/**
 * Stores new and changed parcels in one statement (a JSON array unpacked server-side, far fewer
 * round trips than row inserts). Each row takes a fresh change_seq; returns the highest.
 */
export async function upsertParcels(
  db: Pool | PoolClient,
  parcels: readonly BuiltParcel[],
): Promise<number> {
  if (parcels.length === 0) {
    return 0;
  }
  const columns = {
    folio: [] as string[],
    county_no: [] as number[],
    parcel_id: [] as string[],
    roll_year: [] as number[],
    roll_stage: [] as string[],
    content_hash: [] as string[],
    situs_city: [] as (string | null)[],
    situs_zip5: [] as (string | null)[],
    use_class: [] as (string | null)[],
    homestead: [] as boolean[],
    just_value: [] as number[],
    est_equity: [] as (number | null)[],
    // A text[][] cannot be ragged, so signals travel as one comma-joined string per row.
    signals: [] as string[],
    prior_roll_year: [] as (number | null)[],
    prior_homestead: [] as (boolean | null)[],
    prior_just_value: [] as (number | null)[],
    event: [] as string[],
    detail: [] as string[],
  };
  for (const parcel of parcels) {
    const event = parcel.event;
    columns.folio.push(event.folio);
    columns.county_no.push(event.county_no);
    columns.parcel_id.push(event.parcel_id);
    columns.roll_year.push(event.roll_year);
    columns.roll_stage.push(event.roll_stage);
    columns.content_hash.push(event.content_hash);
    columns.situs_city.push(parcel.situsCity);
    columns.situs_zip5.push(parcel.situsZip5);
    columns.use_class.push(event.land_use.use_class);
    columns.homestead.push(event.homestead);
    columns.just_value.push(event.valuation.just_value);
    columns.est_equity.push(event.valuation.est_equity);
    columns.signals.push(event.signals_fired.join(","));
    columns.prior_roll_year.push(parcel.priorRoll?.rollYear ?? null);
    columns.prior_homestead.push(parcel.priorRoll?.homestead ?? null);
    columns.prior_just_value.push(parcel.priorRoll?.justValue ?? null);
    columns.event.push(JSON.stringify(event));
    columns.detail.push(JSON.stringify(detailOf(parcel)));
  }
  // Typed arrays unnested server-side: one statement per batch, and no JSON parsing in Postgres.
  const result = await db.query<{ max_seq: string | null }>(
    `WITH stored AS (
       INSERT INTO parcels (folio, county_no, parcel_id, roll_year, roll_stage, content_hash,
                            situs_city, situs_zip5, use_class, homestead, just_value, est_equity,
                            signals, prior_roll_year, prior_homestead, prior_just_value, event,
                            detail)
       SELECT r.folio, r.county_no, r.parcel_id, r.roll_year, r.roll_stage, r.content_hash,
              r.situs_city, r.situs_zip5, r.use_class, r.homestead, r.just_value, r.est_equity,
              CASE WHEN r.signals = '' THEN '{}'::text[] ELSE string_to_array(r.signals, ',') END,
              r.prior_roll_year, r.prior_homestead, r.prior_just_value, r.event, r.detail
         FROM unnest($1::text[], $2::smallint[], $3::text[], $4::smallint[], $5::text[],
                     $6::text[], $7::text[], $8::text[], $9::text[], $10::boolean[],
                     $11::bigint[], $12::bigint[], $13::text[], $14::smallint[],
                     $15::boolean[], $16::bigint[], $17::text[], $18::text[])
           AS r(folio, county_no, parcel_id, roll_year, roll_stage, content_hash, situs_city,
                situs_zip5, use_class, homestead, just_value, est_equity, signals,
                prior_roll_year, prior_homestead, prior_just_value, event, detail)
       ON CONFLICT (folio) DO UPDATE SET
         county_no = excluded.county_no, parcel_id = excluded.parcel_id,
         roll_year = excluded.roll_year, roll_stage = excluded.roll_stage,
         content_hash = excluded.content_hash, situs_city = excluded.situs_city,
         situs_zip5 = excluded.situs_zip5, use_class = excluded.use_class,
         homestead = excluded.homestead, just_value = excluded.just_value,
         est_equity = excluded.est_equity, signals = excluded.signals,
         prior_roll_year = excluded.prior_roll_year, prior_homestead = excluded.prior_homestead,
         prior_just_value = excluded.prior_just_value, event = excluded.event,
         detail = excluded.detail, change_seq = nextval('parcel_change_seq'), updated_at = now()
       RETURNING change_seq)
     SELECT max(change_seq) AS max_seq FROM stored`,
    Object.values(columns),
  );
  return Number(result.rows[0]?.max_seq ?? 0);
}

/** Records that every change up to `seq` is on the topic. */
export async function advanceWatermark(db: Pool | PoolClient, seq: number): Promise<void> {
  await db.query(
    "UPDATE publish_watermark SET published_through = greatest(published_through, $1)",
    [seq],
  );
}

/**
 * Publishes every stored change the topic has not confirmed (a crash between store and publish
 * leaves some), oldest first, advancing the watermark after each acknowledged batch. Call it
 * holding the ingest lock. Returns how many records went out.
 */
export async function publishPending(
  pool: Pool,
  publish: (events: ParcelIngested[]) => Promise<void>,
  batchSize = 2000,
): Promise<number> {
  let published = 0;
  for (;;) {
    const result = await pool.query<{ change_seq: string; event: string }>(
      `SELECT change_seq, event FROM parcels
        WHERE change_seq > (SELECT published_through FROM publish_watermark)
        ORDER BY change_seq LIMIT $1`,
      [batchSize],
    );
    const last = result.rows.at(-1);
    if (!last) {
      return published;
    }
    await publish(result.rows.map((row) => JSON.parse(row.event) as ParcelIngested));
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
