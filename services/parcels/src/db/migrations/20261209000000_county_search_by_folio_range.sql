-- A county's parcels are one range of the primary key (a folio starts with the county's two
-- digits and compares byte-wise), so county search reads the primary key and this index only
-- cost every write and a first load's index build.
DROP INDEX IF EXISTS parcels_county_folio;
