-- One row per lead-view: a unique (tenant, UTC day, folio). The primary key is the dedupe key,
-- so a redelivered or duplicated leadview.recorded is a no-op. day leads folio so the folios a
-- tenant was charged for on one day are one index range (the meter's seed).
CREATE TABLE lead_views (
  tenant_id text NOT NULL,
  day date NOT NULL,
  folio text NOT NULL,
  billing_period_start date NOT NULL,
  surface text NOT NULL,
  request_id text NOT NULL,
  key_id text,
  member_id text,
  recorded_at timestamptz NOT NULL,
  -- Where the event sits in leadview.recorded, so a rebuild compares only what it replayed.
  source_partition integer NOT NULL,
  source_offset bigint NOT NULL,
  ledgered_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, day, folio)
);
CREATE INDEX lead_views_by_period ON lead_views (tenant_id, billing_period_start, day);

-- Lead-views per billing period, counted in the same statement as the rows actually inserted.
CREATE TABLE period_usage (
  tenant_id text NOT NULL,
  period_start date NOT NULL,
  lead_views integer NOT NULL,
  PRIMARY KEY (tenant_id, period_start)
);

-- The latest tenant.changed of each tenant (highest revision wins).
CREATE TABLE tenants (
  tenant_id text PRIMARY KEY,
  revision integer NOT NULL,
  tier text NOT NULL,
  status text NOT NULL,
  lead_views_per_month integer NOT NULL,
  billing_anniversary date,
  changed_at timestamptz NOT NULL
);

-- The ledger a rebuild replays leadview.recorded into before comparing it with lead_views.
-- Unlogged and index-free: it is scratch space, refilled from Kafka on every rebuild.
CREATE UNLOGGED TABLE lead_views_shadow (
  tenant_id text NOT NULL,
  day date NOT NULL,
  folio text NOT NULL,
  billing_period_start date NOT NULL,
  surface text NOT NULL,
  request_id text NOT NULL,
  key_id text,
  member_id text,
  recorded_at timestamptz NOT NULL,
  source_partition integer NOT NULL,
  source_offset bigint NOT NULL
);
