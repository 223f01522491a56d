-- Watchlists, their recipe versions, the matches they produced, manual runs, and the compact
-- parcel projection manual runs read.

-- Every change to a watchlist (create, rename, new recipe version, delete) takes the next value,
-- so a matcher instance refreshes its cache by asking for rows above the value it last saw.
CREATE SEQUENCE watchlist_change_seq;

CREATE TABLE watchlists (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  name text NOT NULL,
  current_version integer NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  -- Deleted watchlists stay as rows (their matches keep their meaning); they match nothing.
  deleted_at timestamptz,
  change_seq bigint NOT NULL DEFAULT nextval('watchlist_change_seq')
);
CREATE INDEX watchlists_tenant ON watchlists (tenant_id, created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX watchlists_change_seq ON watchlists (change_seq);

-- Append-only: a version is never edited; a recipe change is the next version.
CREATE TABLE recipe_versions (
  watchlist_id text NOT NULL REFERENCES watchlists (id),
  version integer NOT NULL,
  recipe jsonb NOT NULL,
  fingerprint text NOT NULL,
  effective_from timestamptz NOT NULL,
  PRIMARY KEY (watchlist_id, version)
);

-- One row per match. match_id is matchId(watchlist, recipe version, folio, content hash) for
-- ingest matches, so a redelivered parcel.ingested inserts nothing.
-- Polling reads a watchlist's matches in (tx_id, seq) order and only from transactions older
-- than every transaction still running (pg_snapshot_xmin): a row committed later can then
-- never land behind a cursor already handed out, which ordering by seq alone would allow.
CREATE TABLE matches (
  match_id uuid PRIMARY KEY,
  seq bigserial NOT NULL UNIQUE,
  tenant_id text NOT NULL,
  watchlist_id text NOT NULL,
  recipe_version integer NOT NULL,
  folio text NOT NULL,
  content_hash text NOT NULL,
  trigger text NOT NULL,
  run_id text,
  score double precision NOT NULL,
  signals_fired text[] NOT NULL,
  observed_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  tx_id xid8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE INDEX matches_watchlist_poll ON matches (watchlist_id, tx_id, seq);

CREATE TABLE manual_runs (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  watchlist_id text NOT NULL REFERENCES watchlists (id),
  recipe_version integer NOT NULL,
  status text NOT NULL,
  parcel_limit integer NOT NULL,
  parcels_total integer,
  parcels_scanned integer NOT NULL DEFAULT 0,
  matches_found integer NOT NULL DEFAULT 0,
  error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz,
  heartbeat_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX manual_runs_watchlist ON manual_runs (watchlist_id, created_at);

-- The latest parcel.ingested content per folio, compacted to what evaluation and the match
-- payload need. Manual runs read it most recent first.
CREATE TABLE parcel_projection (
  folio text PRIMARY KEY,
  county_no smallint NOT NULL,
  use_class text,
  content_hash text NOT NULL,
  observed_at timestamptz NOT NULL,
  parcel text NOT NULL
);
CREATE INDEX parcel_projection_recent ON parcel_projection (observed_at, folio);
CREATE INDEX parcel_projection_county_recent ON parcel_projection (county_no, observed_at, folio);
