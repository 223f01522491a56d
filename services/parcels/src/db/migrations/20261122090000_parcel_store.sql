-- The parcel store: one row per folio holding the latest roll content, the derived lead facts,
-- and what the next roll compares against.
CREATE SEQUENCE parcel_change_seq;

CREATE TABLE parcels (
  folio text PRIMARY KEY,
  county_no smallint NOT NULL,
  parcel_id text NOT NULL,
  roll_year smallint NOT NULL,
  roll_stage text NOT NULL,
  content_hash text NOT NULL,
  situs_city text,
  situs_zip5 text,
  use_class text,
  homestead boolean NOT NULL,
  just_value bigint NOT NULL,
  est_equity bigint,
  signals text[] NOT NULL,
  prior_roll_year smallint,
  prior_homestead boolean,
  prior_just_value bigint,
  -- The parcel.ingested record as published, plus signal reasons and the equity working.
  event jsonb NOT NULL,
  detail jsonb NOT NULL,
  -- Outbox position: every stored change takes the next value; rows above the publish
  -- watermark have not been confirmed on parcel.ingested yet.
  change_seq bigint NOT NULL DEFAULT nextval('parcel_change_seq'),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX parcels_parcel_id ON parcels (parcel_id);
CREATE INDEX parcels_change_seq ON parcels (change_seq);
CREATE INDEX parcels_county_folio ON parcels (county_no, folio);
CREATE INDEX parcels_zip_folio ON parcels (situs_zip5, folio);
CREATE INDEX parcels_signals ON parcels USING gin (signals);

-- How far parcel.ingested is confirmed: every change_seq at or below it was published.
CREATE TABLE publish_watermark (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  published_through bigint NOT NULL
);
INSERT INTO publish_watermark (published_through) VALUES (0);

-- Sales from SDF files, one row per sale and parcel; enrich the roll's two sale slots.
CREATE TABLE recorded_sales (
  folio text NOT NULL,
  sale_id text NOT NULL,
  price bigint NOT NULL,
  sale_year smallint NOT NULL,
  sale_month smallint NOT NULL,
  qualification_code text,
  vacant_or_improved text,
  multi_parcel boolean NOT NULL,
  or_book text,
  or_page text,
  clerk_no text,
  PRIMARY KEY (folio, sale_id)
);

-- One row per ingest run, with its counts, for audit and the CLI summary.
CREATE TABLE ingest_runs (
  ingest_id text PRIMARY KEY,
  source_file text NOT NULL,
  kind text NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  rows_read bigint NOT NULL DEFAULT 0,
  rows_new bigint NOT NULL DEFAULT 0,
  rows_changed bigint NOT NULL DEFAULT 0,
  rows_unchanged bigint NOT NULL DEFAULT 0,
  rows_rejected bigint NOT NULL DEFAULT 0
);
