-- Proves the previous migration's check for the rows already there. VALIDATE reads the whole table
-- under a SHARE UPDATE EXCLUSIVE lock, which lets the ledger read and write all the while; the
-- next migration can then attach the table as a partition without reading it again.
ALTER TABLE lead_views VALIDATE CONSTRAINT lead_views_before_monthly_partitions;
