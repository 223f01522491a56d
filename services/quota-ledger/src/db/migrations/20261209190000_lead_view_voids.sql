-- The lead-views of reads voided on leadview.voided, one row per (tenant, day, folio, request):
-- a recorded event of a voided request is never charged, whichever of the two is read first.
CREATE TABLE lead_view_voids (
  tenant_id text NOT NULL,
  day date NOT NULL,
  folio text NOT NULL,
  request_id text NOT NULL,
  voided_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, day, folio, request_id)
);

-- Recorded events that lost to an earlier one of the same (tenant, day, folio) from another
-- request. Should the charged event be voided, the earliest of these is charged in its place, as
-- a replay that skips voided events would charge it.
CREATE TABLE lead_view_runners_up (
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
  source_offset bigint NOT NULL,
  PRIMARY KEY (tenant_id, day, folio, request_id)
);
