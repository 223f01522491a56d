-- Consumers record each event they applied, in the same transaction as its effect, so a
-- redelivered event (at-least-once) is recognised and skipped.
CREATE TABLE processed_events (
  consumer text NOT NULL,
  event_id text NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, event_id)
);
