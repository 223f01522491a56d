-- Never used: every consumer of this service is idempotent by its own keys, so no table of
-- processed events is kept; and nothing here writes an outbox (the service publishes straight
-- from its work, where the caller waits for the broker's acknowledgement or the work is redone).
DROP TABLE IF EXISTS processed_events;
DROP TABLE IF EXISTS outbox;
