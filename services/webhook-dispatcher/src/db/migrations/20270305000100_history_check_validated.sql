-- Proves the previous migration's checks for the rows already there. VALIDATE reads each table
-- under a SHARE UPDATE EXCLUSIVE lock, which lets the dispatcher read and write all the while;
-- the next migration can then attach the tables as partitions without reading them again.
ALTER TABLE deliveries VALIDATE CONSTRAINT deliveries_before_monthly_partitions;
ALTER TABLE attempts VALIDATE CONSTRAINT attempts_before_monthly_partitions;
