-- The planner needs statistics only for the columns reads filter or sort on (folio, parcel_id,
-- county_no, situs_city, situs_zip5, use_class, signals, just_value, est_equity, change_seq).
-- ANALYZE of the others, the lead documents above all, was about half of its time after a
-- first load, and nothing reads them.
ALTER TABLE parcels
  ALTER COLUMN roll_year SET STATISTICS 0,
  ALTER COLUMN roll_stage SET STATISTICS 0,
  ALTER COLUMN content_hash SET STATISTICS 0,
  ALTER COLUMN homestead SET STATISTICS 0,
  ALTER COLUMN prior_roll_year SET STATISTICS 0,
  ALTER COLUMN prior_homestead SET STATISTICS 0,
  ALTER COLUMN prior_just_value SET STATISTICS 0,
  ALTER COLUMN event SET STATISTICS 0,
  ALTER COLUMN detail SET STATISTICS 0,
  ALTER COLUMN record SET STATISTICS 0,
  ALTER COLUMN record_schema SET STATISTICS 0,
  ALTER COLUMN source_file_id SET STATISTICS 0,
  ALTER COLUMN source_line SET STATISTICS 0,
  ALTER COLUMN source_seq_no SET STATISTICS 0,
  ALTER COLUMN updated_at SET STATISTICS 0;
