-- Relays publish shards in parallel, each shard in id order; rows written before this column
-- existed, or by a writer that does not set it, share shard 0 and keep their table order.
ALTER TABLE outbox ADD COLUMN shard smallint NOT NULL DEFAULT 0;
CREATE INDEX outbox_unpublished_by_shard ON outbox (shard, id) WHERE published_at IS NULL;
