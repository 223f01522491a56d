-- The parcel.ingested record is stored as published: Avro bytes and the writer schema they were
-- encoded with (the record's schema header), read back through that schema into the current one.
-- One encoding serves the topic and the store, and the row is about a fifth smaller than with the
-- event as JSON. Rows stored before keep their JSON `event` until their parcel next changes.
ALTER TABLE parcels
  ADD COLUMN record bytea,
  ADD COLUMN record_schema text,
  ALTER COLUMN event DROP NOT NULL,
  ADD CONSTRAINT parcels_event_stored CHECK (
    (record IS NOT NULL AND record_schema IS NOT NULL) OR event IS NOT NULL
  );
