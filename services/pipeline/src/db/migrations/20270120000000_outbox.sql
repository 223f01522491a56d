CREATE TABLE outbox (
  id bigserial PRIMARY KEY,
  topic text NOT NULL,
  payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz
);
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;
-- The trace context of the work that wrote the row, and the relay shard (decision 0260).
ALTER TABLE outbox ADD COLUMN headers jsonb;
ALTER TABLE outbox ADD COLUMN shard smallint NOT NULL DEFAULT 0;
CREATE INDEX outbox_unpublished_by_shard ON outbox (shard, id) WHERE published_at IS NULL;
