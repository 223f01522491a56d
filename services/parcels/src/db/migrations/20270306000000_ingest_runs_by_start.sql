-- Ingest runs are kept 90 days (decision 0394); retention removes them oldest first.
CREATE INDEX ingest_runs_started ON ingest_runs (started_at);
