-- deliveries and attempts become tables partitioned by month (decision 0392), in three steps of
-- their own short transactions, so no step holds a lock that stops reads or writes while it reads
-- a table. First a check on each that every row falls before the first month the monthly
-- partitions will take: the month after the one two days from now (two days, so a clock a little
-- ahead at a month's end still writes). NOT VALID: it binds new rows at once, and the next
-- migration proves it for the rows already there without stopping writes.
SET LOCAL lock_timeout = '5s';

DO $$
DECLARE
  first_month timestamptz := (date_trunc('month', (now() AT TIME ZONE 'UTC') + interval '2 days')
                              + interval '1 month') AT TIME ZONE 'UTC';
BEGIN
  EXECUTE format(
    'ALTER TABLE deliveries ADD CONSTRAINT deliveries_before_monthly_partitions '
    'CHECK (created_at < %L) NOT VALID', first_month);
  EXECUTE format(
    'ALTER TABLE attempts ADD CONSTRAINT attempts_before_monthly_partitions '
    'CHECK (attempted_at < %L) NOT VALID', first_month);
END
$$;
