-- The trace context (W3C traceparent/tracestate) of the work that wrote the row, so the relay
-- publishes the event as part of that trace rather than of its own polling loop.
ALTER TABLE outbox ADD COLUMN headers jsonb;
