-- Folios, parcel ids and zip codes are identifiers, not words: they compare and sort byte by
-- byte (COLLATE "C"). Under a locale's collation every comparison took the slower path (and its
-- sorts no abbreviated keys): the primary key's inserts during a roll load, the secondary index
-- builds after a first load and ANALYZE's sorts. Folios are ASCII, so their order is the same.
ALTER TABLE parcels
  ALTER COLUMN folio TYPE text COLLATE "C",
  ALTER COLUMN parcel_id TYPE text COLLATE "C",
  ALTER COLUMN situs_zip5 TYPE text COLLATE "C";
