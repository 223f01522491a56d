-- lead_views, partitioned by range of day, one partition a month (decision 0393): retention then
-- drops a month whole instead of deleting rows. The table as it was becomes the first partition,
-- attached as it is (its rows are not copied, its indexes become the partitions' indexes), for
-- every day before the month its check names; its validated check spares the attach a scan, so
-- the access exclusive lock this takes lasts only for catalog changes. The following months get
-- partitions of their own, created ahead by the service.
--
-- The primary key keeps (tenant_id, day, folio): it includes the partition key, and a day lies in
-- exactly one partition, so one lead-view per tenant, folio and UTC day holds across partitions
-- as it did in one table.
SET LOCAL lock_timeout = '5s';

LOCK TABLE lead_views IN ACCESS EXCLUSIVE MODE;

DO $$
DECLARE
  first_month date;
  first_partition text;
  month date;
BEGIN
  SELECT (regexp_match(pg_get_constraintdef(c.oid), '''([0-9-]+)'''))[1]::date INTO first_month
    FROM pg_constraint c
   WHERE c.conrelid = 'lead_views'::regclass AND c.conname = 'lead_views_before_monthly_partitions';
  -- Named for the last month it holds, so the service's monthly partitions never take its name.
  first_partition := 'lead_views_p' || to_char(first_month - interval '1 month', 'YYYYMM');

  EXECUTE format('ALTER INDEX lead_views_pkey RENAME TO %I', first_partition || '_pkey');
  EXECUTE format('ALTER INDEX lead_views_by_period RENAME TO %I', first_partition || '_by_period');
  EXECUTE format('ALTER TABLE lead_views RENAME TO %I', first_partition);

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
    source_partition integer NOT NULL,
    source_offset bigint NOT NULL,
    ledgered_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT lead_views_pkey PRIMARY KEY (tenant_id, day, folio)
  ) PARTITION BY RANGE (day);
  CREATE INDEX lead_views_by_period ON lead_views (tenant_id, billing_period_start, day);

  EXECUTE format('ALTER TABLE lead_views ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)',
                 first_partition, first_month);
  EXECUTE format('ALTER TABLE %I DROP CONSTRAINT lead_views_before_monthly_partitions',
                 first_partition);

  FOR i IN 0..2 LOOP
    month := (first_month + make_interval(months => i))::date;
    EXECUTE format('CREATE TABLE %I PARTITION OF lead_views FOR VALUES FROM (%L) TO (%L)',
                   'lead_views_p' || to_char(month, 'YYYYMM'), month,
                   (month + interval '1 month')::date);
  END LOOP;
END
$$;
