-- The W3C trace context (traceparent/tracestate) of the match.found record a delivery was created
-- from: every attempt, retry and replay of the delivery runs as a span of that trace, so one trace
-- goes from the roll ingest to the receiver.
ALTER TABLE deliveries ADD COLUMN trace_context jsonb;
