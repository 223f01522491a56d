-- The column the delivery log kept receivers' answers in goes (decision 0331). No release since
-- the one that stopped keeping them names it in a statement, so one still running while this
-- migration applies has nothing to lose. Dropped on the partitioned table, it goes from every
-- partition at once, the first one (the table as it was) too; a drop changes the catalog only
-- and rewrites no row, so the lock it takes lasts that long, and a busy table fails the
-- migration instead of holding its readers and writers behind a queued lock.
SET LOCAL lock_timeout = '5s';

ALTER TABLE attempts DROP COLUMN IF EXISTS response_excerpt;
