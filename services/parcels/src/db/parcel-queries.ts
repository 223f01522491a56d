import type { LeadSearchQuery } from "@th/api-schemas";
import type { Pool } from "@th/db";
import type { ParcelDetail } from "../domain/lead.ts";
import { countyFolioRange, parseFolio } from "../domain/parcel.ts";
import {
  STORED_EVENT_COLUMNS,
  type StoredEventColumns,
  type StoredParcel,
  storedEvent,
} from "./parcel-store.ts";

interface Row extends StoredEventColumns {
  folio: string;
  detail: ParcelDetail;
}

/** The detail is JSON text, which Postgres parses back; the event is decoded here. */
const COLUMNS = `folio, ${STORED_EVENT_COLUMNS}, detail::json AS detail`;

function storedParcel(row: Row): StoredParcel {
  return { event: storedEvent(row), detail: row.detail };
}

export async function findByFolios(
  pool: Pool,
  folios: readonly string[],
): Promise<Map<string, StoredParcel>> {
  // Named, so each connection plans it once: planning cost more than running it.
  const result = await pool.query<Row>({
    name: "parcels.by-folios",
    text: `SELECT ${COLUMNS} FROM parcels WHERE folio = ANY($1::text[])`,
    values: [folios],
  });
  return new Map(result.rows.map((row) => [row.folio, storedParcel(row)]));
}

/** Parcels whose county PARCEL_ID is `parcelId`, in any county (at most `limit`). */
export async function findByParcelId(
  pool: Pool,
  parcelId: string,
  limit = 5,
): Promise<StoredParcel[]> {
  const result = await pool.query<Row>({
    name: "parcels.by-parcel-id",
    text: `SELECT ${COLUMNS} FROM parcels WHERE parcel_id = $1 ORDER BY folio LIMIT $2`,
    values: [parcelId, limit],
  });
  return result.rows.map(storedParcel);
}

/** The cursor is the last folio of the previous page, base64url-encoded so clients treat it as opaque. */
export function encodeCursor(folio: string): string {
  return Buffer.from(`f:${folio}`, "utf8").toString("base64url");
}

/** The folio a cursor carries; null for anything this API would not have issued. */
export function decodeCursor(cursor: string): string | null {
  const decoded = Buffer.from(cursor, "base64url").toString("utf8");
  if (!decoded.startsWith("f:")) {
    return null;
  }
  const folio = decoded.slice(2);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
  return parseFolio(folio) !== null && !/[\u0000-\u001f\ufffd]/.test(folio) ? folio : null;
}

type SearchFilters = Omit<LeadSearchQuery, "cursor" | "limit">;

/** The WHERE clause of a search, with its parameters numbered from $1. */
function filterClause(query: SearchFilters, after: string | null) {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (clause: (placeholder: string) => string, value: unknown) => {
    params.push(value);
    where.push(clause(`$${params.length}`));
  };
  if (query.county !== undefined) {
    // A county's parcels are one range of the primary key (folios compare byte-wise).
    const range = countyFolioRange(query.county);
    add((p) => `folio >= ${p}`, range.from);
    add((p) => `folio < ${p}`, range.before);
  }
  if (query.city !== undefined) {
    add((p) => `situs_city = ${p}`, query.city.trim().toUpperCase().replace(/\s+/g, " "));
  }
  if (query.zip !== undefined) {
    add((p) => `situs_zip5 = ${p}`, query.zip);
  }
  if (query.use_class !== undefined) {
    add((p) => `use_class = ${p}`, query.use_class);
  }
  if (query.signals !== undefined && query.signals.length > 0) {
    add((p) => `signals @> ${p}::text[]`, query.signals);
  }
  if (query.min_just_value !== undefined) {
    add((p) => `just_value >= ${p}`, query.min_just_value);
  }
  if (query.max_just_value !== undefined) {
    add((p) => `just_value <= ${p}`, query.max_just_value);
  }
  if (query.min_equity !== undefined) {
    add((p) => `est_equity >= ${p}`, query.min_equity);
  }
  if (query.max_equity !== undefined) {
    add((p) => `est_equity <= ${p}`, query.max_equity);
  }
  if (after !== null) {
    add((p) => `folio > ${p}`, after);
  }
  return { sql: where.length > 0 ? `WHERE ${where.join(" AND ")}` : "", params };
}

/** One page of parcels matching every given filter, in folio order (keyset pagination). */
export async function searchParcels(
  pool: Pool,
  query: Omit<LeadSearchQuery, "cursor"> & { after: string | null },
): Promise<{ parcels: StoredParcel[]; lastFolio: string | null; more: boolean }> {
  const filter = filterClause(query, query.after);
  const params = [...filter.params, query.limit + 1];
  const result = await pool.query<Row>(
    `SELECT ${COLUMNS} FROM parcels ${filter.sql} ORDER BY folio LIMIT $${params.length}`,
    params,
  );
  const rows = result.rows.slice(0, query.limit);
  return {
    parcels: rows.map(storedParcel),
    lastFolio: rows.at(-1)?.folio ?? null,
    more: result.rows.length > query.limit,
  };
}

/** The most rows one export writes; no count reads past it. */
export const COUNT_CEILING = 100_000;

/**
 * The count of a search, reading at most `atMost` parcels (never more than COUNT_CEILING): an
 * export is priced by min(matches, its max_rows), so parcels past that bound change nothing, and
 * an unfiltered count of the statewide table would read millions of rows on every request.
 */
export function countQuery(query: SearchFilters, atMost = COUNT_CEILING) {
  const filter = filterClause(query, null);
  const params = [...filter.params, Math.min(Math.max(1, Math.trunc(atMost)), COUNT_CEILING)];
  return {
    text: `SELECT count(*) AS n FROM (SELECT 1 FROM parcels ${filter.sql} LIMIT $${params.length}) bounded`,
    values: params,
  };
}

/** How many parcels a search matches, up to `atMost`, so an export is priced before it starts. */
export async function countParcels(
  pool: Pool,
  query: SearchFilters,
  atMost?: number,
): Promise<number> {
  const result = await pool.query<{ n: string }>(countQuery(query, atMost));
  return Number(result.rows[0]?.n ?? 0);
}

/**
 * The folios an export of a search writes, in its order and no further than `atMost` (never past
 * COUNT_CEILING): what prices it when its rows might not all be new lead-views.
 */
export async function exportFolios(
  pool: Pool,
  query: SearchFilters,
  atMost: number,
): Promise<string[]> {
  const filter = filterClause(query, null);
  const params = [...filter.params, Math.min(Math.max(1, Math.trunc(atMost)), COUNT_CEILING)];
  const result = await pool.query<{ folio: string }>(
    `SELECT folio FROM parcels ${filter.sql} ORDER BY folio LIMIT $${params.length}`,
    params,
  );
  return result.rows.map((row) => row.folio);
}
