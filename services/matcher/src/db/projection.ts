// The matcher's own compact copy of the parcel store, fed by parcel.ingested: the latest
// content per folio, reduced to what evaluation and the match payload read. Manual runs scan
// it most recent first; the hot matching path never touches it.
import type { ParcelIngested } from "@th/contracts";
import type { Pool } from "@th/db";

/** Drops what no recipe filters on and no match payload carries (about half of the record). */
function compactParcel(parcel: ParcelIngested): ParcelIngested {
  return {
    ...parcel,
    source_file: null,
    previous_content_hash: null,
    land_use: { ...parcel.land_use, appraiser_uc: null },
    owner: {
      name: parcel.owner.name,
      mailing_state: parcel.owner.mailing_state,
      mailing_address: {
        line1: null,
        line2: null,
        city: null,
        // Evaluation falls back to the raw state when mailing_state is null.
        state: parcel.owner.mailing_state === null ? parcel.owner.mailing_address.state : null,
        zip: null,
      },
    },
    valuation: { ...parcel.valuation, assessed_value: null, taxable_value: null, land_value: null },
  };
}

/** Upserts parcels, keeping per folio the most recently observed content. */
export async function upsertProjection(
  pool: Pool,
  parcels: readonly ParcelIngested[],
): Promise<void> {
  // One row per folio per statement (ON CONFLICT cannot touch a row twice): the latest wins.
  const latest = new Map<string, ParcelIngested>();
  for (const parcel of parcels) {
    const seen = latest.get(parcel.folio);
    if (!seen || seen.observed_at <= parcel.observed_at) {
      latest.set(parcel.folio, parcel);
    }
  }
  const rows = [...latest.values()].sort((a, b) => (a.folio < b.folio ? -1 : 1));
  await pool.query(
    `INSERT INTO parcel_projection (folio, county_no, use_class, content_hash, observed_at, parcel)
     SELECT * FROM unnest($1::text[], $2::smallint[], $3::text[], $4::text[], $5::timestamptz[], $6::text[])
     ON CONFLICT (folio) DO UPDATE
        SET county_no = EXCLUDED.county_no, use_class = EXCLUDED.use_class,
            content_hash = EXCLUDED.content_hash, observed_at = EXCLUDED.observed_at,
            parcel = EXCLUDED.parcel
      WHERE parcel_projection.observed_at <= EXCLUDED.observed_at`,
    [
      rows.map((p) => p.folio),
      rows.map((p) => p.county_no),
      rows.map((p) => p.land_use.use_class),
      rows.map((p) => p.content_hash),
      rows.map((p) => p.observed_at),
      rows.map((p) => JSON.stringify(compactParcel(p))),
    ],
  );
}

export interface ProjectionPage {
  parcels: ParcelIngested[];
  last: { observedAt: string; folio: string } | null;
}

/** The next page of the projection, most recent first, optionally only some counties. */
export async function readProjectionPage(
  pool: Pool,
  options: {
    counties: readonly number[] | undefined;
    after: { observedAt: string; folio: string } | null;
    limit: number;
  },
): Promise<ProjectionPage> {
  const { rows } = await pool.query<{ parcel: string; observed_at: Date; folio: string }>(
    `SELECT parcel, observed_at, folio FROM parcel_projection
      WHERE ($1::smallint[] IS NULL OR county_no = ANY($1::smallint[]))
        AND ($2::timestamptz IS NULL OR (observed_at, folio) < ($2::timestamptz, $3::text))
      ORDER BY observed_at DESC, folio DESC
      LIMIT $4`,
    [
      options.counties ?? null,
      options.after?.observedAt ?? null,
      options.after?.folio ?? "",
      options.limit,
    ],
  );
  const last = rows[rows.length - 1];
  return {
    parcels: rows.map((row) => JSON.parse(row.parcel) as ParcelIngested),
    last: last ? { observedAt: last.observed_at.toISOString(), folio: last.folio } : null,
  };
}

/** How many parcels a run over these counties would see, up to `limit`. */
export async function countProjection(
  pool: Pool,
  counties: readonly number[] | undefined,
  limit: number,
): Promise<number> {
  const { rows } = await pool.query<{ count: string }>(
    `SELECT count(*) FROM (SELECT 1 FROM parcel_projection
      WHERE ($1::smallint[] IS NULL OR county_no = ANY($1::smallint[])) LIMIT $2) AS capped`,
    [counties ?? null, limit],
  );
  return Number(rows[0]?.count ?? 0);
}
