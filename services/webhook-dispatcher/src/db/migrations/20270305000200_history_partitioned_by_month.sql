-- deliveries and attempts, partitioned by range of created_at and attempted_at, one partition a
-- month (decision 0392): retention then drops a month whole instead of deleting rows. Each table
-- as it was becomes its first partition, attached as it is (its rows are not copied; its indexes
-- become the partitions' indexes), for every time before the month its check names; its
-- validated check spares the attach a scan, so the access exclusive lock this takes lasts only
-- for catalog changes. The following months get partitions of their own, created ahead by the
-- service.
--
-- A unique index on a partitioned table must hold the partition key, so neither table keeps a
-- key of its own columns alone:
-- - deliveries is unique on (id, created_at). A delivery id is a random UUID, so ids stay unique;
--   a lookup by id alone probes each partition's index (a few), the claim passes created_at too.
-- - (endpoint_id, match_id) is no longer unique: the intake finds an existing delivery of a match
--   under a per-tenant lock instead of ON CONFLICT (a release before this one, still running
--   while this one rolls out, fails its intake statements and leaves their records to be retried).
-- - attempts is unique on (delivery_id, replay_no, attempt, attempted_at): one attempt is written
--   once, with one time, so ON CONFLICT DO NOTHING still drops a second write of it.
-- No foreign key links them (none did): an attempt's partition follows its own time.
--
-- Indexes the old tables have are declared on the new ones as they are, and attach at no cost.
-- The new ones are declared ON ONLY the partitioned table: every new partition gets them, and
-- the service builds them on the first partition CONCURRENTLY (no lock that stops writes) and
-- attaches them, after which they are valid on the partitioned table too.
SET LOCAL lock_timeout = '5s';

LOCK TABLE deliveries, attempts IN ACCESS EXCLUSIVE MODE;

DO $$
DECLARE
  first_month timestamptz;
  first_deliveries text;
  first_attempts text;
  month timestamptz;
BEGIN
  SELECT (regexp_match(pg_get_constraintdef(c.oid), '''([^'']+)'''))[1]::timestamptz INTO first_month
    FROM pg_constraint c
   WHERE c.conrelid = 'deliveries'::regclass AND c.conname = 'deliveries_before_monthly_partitions';
  -- Named for the last month they hold, so the service's monthly partitions never take the name.
  first_deliveries := 'deliveries_p' || to_char((first_month - interval '1 day') AT TIME ZONE 'UTC', 'YYYYMM');
  first_attempts := 'attempts_p' || to_char((first_month - interval '1 day') AT TIME ZONE 'UTC', 'YYYYMM');

  EXECUTE format('ALTER INDEX deliveries_pkey RENAME TO %I', first_deliveries || '_pkey');
  EXECUTE format('ALTER INDEX deliveries_endpoint_id_match_id_key RENAME TO %I',
                 first_deliveries || '_endpoint_id_match_id_key');
  EXECUTE format('ALTER INDEX deliveries_by_endpoint RENAME TO %I', first_deliveries || '_by_endpoint');
  EXECUTE format('ALTER INDEX deliveries_parked RENAME TO %I', first_deliveries || '_parked');
  EXECUTE format('ALTER INDEX deliveries_due_by_tenant RENAME TO %I', first_deliveries || '_due_by_tenant');
  EXECUTE format('ALTER INDEX deliveries_exhausted_due RENAME TO %I', first_deliveries || '_exhausted_due');
  EXECUTE format('ALTER TABLE deliveries RENAME TO %I', first_deliveries);
  EXECUTE format('ALTER INDEX attempts_pkey RENAME TO %I', first_attempts || '_pkey');
  EXECUTE format('ALTER TABLE attempts RENAME TO %I', first_attempts);

  CREATE TABLE deliveries (
    id uuid NOT NULL,
    endpoint_id text NOT NULL,
    tenant_id text NOT NULL,
    watchlist_id text NOT NULL,
    match_id text NOT NULL,
    folio text NOT NULL,
    event_type text NOT NULL,
    body text NOT NULL,
    state text NOT NULL DEFAULT 'pending',
    attempts integer NOT NULL DEFAULT 0,
    replay_no integer NOT NULL DEFAULT 0,
    due_at timestamptz NOT NULL DEFAULT now(),
    charged_at timestamptz,
    parked_reason text,
    lease_token uuid,
    lease_until timestamptz,
    first_attempted_at timestamptz,
    last_attempted_at timestamptz,
    last_status_code integer,
    last_failure text,
    last_error text,
    completed_at timestamptz,
    dead_lettered_at timestamptz,
    dead_letter_reason text,
    hold_until timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    trace_context jsonb
  ) PARTITION BY RANGE (created_at);
  CREATE INDEX deliveries_by_endpoint ON deliveries (endpoint_id, created_at DESC, id);
  CREATE INDEX deliveries_parked ON deliveries (tenant_id) WHERE state = 'parked';
  CREATE INDEX deliveries_due_by_tenant ON deliveries (tenant_id, due_at)
    WHERE state IN ('pending', 'retrying', 'exhausted', 'parked');
  CREATE INDEX deliveries_exhausted_due ON deliveries (due_at) WHERE state = 'exhausted';

  CREATE TABLE attempts (
    delivery_id uuid NOT NULL,
    replay_no integer NOT NULL,
    attempt integer NOT NULL,
    attempted_at timestamptz NOT NULL,
    duration_ms integer,
    status_code integer,
    failure text,
    error text,
    response_excerpt text,
    state text NOT NULL
  ) PARTITION BY RANGE (attempted_at);

  EXECUTE format('ALTER TABLE deliveries ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)',
                 first_deliveries, first_month);
  EXECUTE format('ALTER TABLE %I DROP CONSTRAINT deliveries_before_monthly_partitions',
                 first_deliveries);
  EXECUTE format('ALTER TABLE attempts ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)',
                 first_attempts, first_month);
  EXECUTE format('ALTER TABLE %I DROP CONSTRAINT attempts_before_monthly_partitions',
                 first_attempts);

  -- Lookups by id (the key), the intake's look for a match already delivered, retention's
  -- look for what is held and its oldest row; attempts by delivery (the key) and by time.
  CREATE UNIQUE INDEX deliveries_pkey ON ONLY deliveries (id, created_at);
  CREATE INDEX deliveries_by_match ON ONLY deliveries (endpoint_id, match_id);
  CREATE INDEX deliveries_held ON ONLY deliveries (state, hold_until)
    WHERE state IN ('complete', 'dead_letter');
  CREATE INDEX deliveries_created_at ON ONLY deliveries (created_at);
  CREATE UNIQUE INDEX attempts_pkey ON ONLY attempts (delivery_id, replay_no, attempt, attempted_at);
  CREATE INDEX attempts_attempted_at ON ONLY attempts (attempted_at);

  FOR i IN 0..2 LOOP
    month := (first_month AT TIME ZONE 'UTC' + make_interval(months => i)) AT TIME ZONE 'UTC';
    EXECUTE format('CREATE TABLE %I PARTITION OF deliveries FOR VALUES FROM (%L) TO (%L)
                    WITH (fillfactor = 50)',
                   'deliveries_p' || to_char(month AT TIME ZONE 'UTC', 'YYYYMM'), month,
                   (month AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC');
    EXECUTE format('CREATE TABLE %I PARTITION OF attempts FOR VALUES FROM (%L) TO (%L)',
                   'attempts_p' || to_char(month AT TIME ZONE 'UTC', 'YYYYMM'), month,
                   (month AT TIME ZONE 'UTC' + interval '1 month') AT TIME ZONE 'UTC');
  END LOOP;
END
$$;
