-- The lead documents are read whole and never queried inside; as text they skip jsonb parsing
-- on every ingest write, which was most of the store's cost.
ALTER TABLE parcels ALTER COLUMN event TYPE text USING event::text;
ALTER TABLE parcels ALTER COLUMN detail TYPE text USING detail::text;
