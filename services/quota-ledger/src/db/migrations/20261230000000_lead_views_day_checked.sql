-- lead_views becomes a table partitioned by month of its day (decision 0393), in three steps of
-- their own short transactions, so no step holds a lock that stops reads or writes while it reads
-- the table. First a check that every row's day falls before the first month the new monthly
-- partitions will take: the month after the one two days from now (two days, so a clock a little
-- ahead at a month's end still records). NOT VALID: it binds new rows at once, and the next
-- migration proves it for the rows already there without stopping writes.
SET LOCAL lock_timeout = '5s';

DO $$
DECLARE
  first_month date := (date_trunc('month', (now() AT TIME ZONE 'UTC') + interval '2 days')
                       + interval '1 month')::date;
BEGIN
  EXECUTE format(
    'ALTER TABLE lead_views ADD CONSTRAINT lead_views_before_monthly_partitions '
    'CHECK (day < %L) NOT VALID', first_month);
END
$$;
