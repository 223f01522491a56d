-- The roll record each parcel was stored from: its file (name and size), line and SEQ_NO. A file
-- that repeats a PARCEL_ID keeps its highest SEQ_NO, and the repeat may lie any distance apart.
ALTER TABLE parcels
  ADD COLUMN source_file_id text,
  ADD COLUMN source_line integer,
  ADD COLUMN source_seq_no integer;
