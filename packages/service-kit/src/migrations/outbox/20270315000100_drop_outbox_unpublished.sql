-- Nothing reads unpublished rows by id alone any more: the relay finds pending shards and claims
-- a shard's batch through outbox_unpublished_by_shard, and the purge walks the primary key. The
-- index only cost every insert and publish a write.
DROP INDEX IF EXISTS outbox_unpublished;
