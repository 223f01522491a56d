-- Never used: every consumer of this service is idempotent by its own keys (a unique or primary
-- key its effect is written under, or a revision or state the update checks), so no table of
-- processed events is kept.
DROP TABLE IF EXISTS processed_events;
