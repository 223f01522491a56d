-- The digest of the roll row each parcel's facts were built from (decision 0160): a re-ingest
-- tells an unchanged row by it without normalizing and hashing the row's facts. Null for parcels
-- stored before it was kept; those are compared by their content hash until they next change.
ALTER TABLE parcels ADD COLUMN row_digest text;
ALTER TABLE parcels ALTER COLUMN row_digest SET STATISTICS 0;
