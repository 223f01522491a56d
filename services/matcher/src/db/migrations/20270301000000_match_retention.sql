-- Matches and manual runs are kept for a while, then removed (decision 0394). Matches are removed
-- from the head of the table in seq order (its unique index), so no index is added to them.

-- Per watchlist, the polling position (tx_id, seq) of the last match retention removed: a cursor
-- before it would skip a removed match, so polling refuses it (410 cursor_expired) instead of
-- answering a page with a hole. Written in the statement that removes the matches.
CREATE TABLE match_retention_marks (
  watchlist_id text PRIMARY KEY,
  removed_tx_id xid8 NOT NULL,
  removed_seq bigint NOT NULL,
  marked_at timestamptz NOT NULL
);

-- Retention removes manual runs oldest first.
CREATE INDEX manual_runs_created ON manual_runs (created_at);
