import { contractForTopic, type TopicContract } from "@th/contracts";
import type { Pool } from "@th/db";
import { outboxShard } from "@th/service-kit";
import type { OutboxEvent } from "../domain/outcome.ts";

/** What one attempt writes: the delivery's new state, the attempt row and its events. */
export interface AttemptRecord {
  id: string;
  leaseToken: string;
  replayNo: number;
  attempt: number;
  attemptedAt: Date;
  durationMs: number;
  statusCode: number | null;
  failure: string | null;
  error: string | null;
  state: "complete" | "retrying" | "exhausted" | "dead_letter";
  dueAt: Date | null;
  deadLetterReason: string | null;
  recordedAt: Date;
  holdUntil: Date;
  /** The attempt delivered the lead (2xx): the delivery is marked charged with its view. */
  charge: boolean;
  events: OutboxEvent[];
}

/** The outbox shard of an event (decision 0260). */
function shardOf(event: OutboxEvent): number {
  const contract = contractForTopic(event.topic) as TopicContract<unknown> | undefined;
  if (!contract) {
    throw new Error(`outbox event for unknown topic ${event.topic}`);
  }
  return outboxShard(contract, event.payload);
}

/** Text fit for a Postgres text column, which cannot hold NUL. */
function storableText(text: string): string {
  return text.includes("\u0000") ? text.replaceAll("\u0000", "") : text;
}

/**
 * Writes a group of attempts in one statement (one round trip, one commit): updates the
 * deliveries still leased by each record's token, inserts their attempt rows and their outbox
 * events, and answers which deliveries it updated. An attempt whose lease was lost writes nothing.
 * A delivered attempt's lead-view (`leadview.recorded`) is written by the same statement that
 * marks the delivery complete and charged, so the charge and the delivered state commit together.
 */
export async function writeAttempts(
  pool: Pool,
  records: readonly AttemptRecord[],
): Promise<Set<string>> {
  // One JSON document per column set rather than Postgres arrays: serialising it is one native
  // call, where array parameters are escaped element by element.
  const input = records.map((r) => ({
    id: r.id,
    lease_token: r.leaseToken,
    replay_no: r.replayNo,
    attempt: r.attempt,
    attempted_at: r.attemptedAt,
    duration_ms: r.durationMs,
    status_code: r.statusCode,
    failure: r.failure,
    error: r.error === null ? null : storableText(r.error),
    state: r.state,
    due_at: r.dueAt,
    dead_letter_reason: r.deadLetterReason,
    recorded_at: r.recordedAt,
    hold_until: r.holdUntil,
    charge: r.charge,
  }));
  const events = records
    .flatMap((record) => record.events)
    .map((e, ord) => ({ ...e, view: e.view === true, ord, shard: shardOf(e) }));
  const { rows } = await pool.query<{ id: string }>({
    // Named, so each connection parses and plans it once: its plan does not depend on the
    // values (the input's size is not known to the planner), and parse and plan cost about as
    // much as a small group's writes.
    name: "dispatcher-record-attempts",
    text: `WITH input AS (
       SELECT * FROM json_to_recordset($1::json)
         AS i(id uuid, lease_token uuid, replay_no int, attempt int, attempted_at timestamptz,
              duration_ms int, status_code int, failure text, error text,
              state text, due_at timestamptz, dead_letter_reason text,
              recorded_at timestamptz, hold_until timestamptz, charge boolean)
     ), prior AS (
       -- The rows as they were before this statement (its snapshot): a lead-view is written
       -- only for a delivery not charged before, so a redelivery never charges twice.
       SELECT d.id, d.charged_at FROM deliveries d JOIN input i ON i.id = d.id
     ), updated AS (
       UPDATE deliveries d SET
         state = i.state, attempts = i.attempt,
         first_attempted_at = COALESCE(d.first_attempted_at, i.attempted_at),
         last_attempted_at = i.attempted_at, last_status_code = i.status_code,
         last_failure = i.failure, last_error = i.error,
         due_at = COALESCE(i.due_at, d.due_at), lease_token = NULL, lease_until = NULL,
         completed_at = CASE WHEN i.state = 'complete' THEN i.recorded_at ELSE d.completed_at END,
         dead_lettered_at = CASE WHEN i.state = 'dead_letter' THEN i.recorded_at ELSE d.dead_lettered_at END,
         dead_letter_reason = CASE WHEN i.state = 'dead_letter' THEN i.dead_letter_reason ELSE d.dead_letter_reason END,
         hold_until = CASE WHEN i.state IN ('complete', 'dead_letter') THEN i.hold_until ELSE d.hold_until END,
         parked_reason = NULL,
         charged_at = CASE WHEN i.charge THEN COALESCE(d.charged_at, i.recorded_at)
                           ELSE d.charged_at END
       FROM input i
       WHERE d.id = i.id AND d.lease_token = i.lease_token
       RETURNING d.id
     ), attempted AS (
       INSERT INTO attempts (delivery_id, replay_no, attempt, attempted_at, duration_ms,
                             status_code, failure, error, state)
       SELECT i.id, i.replay_no, i.attempt, i.attempted_at, i.duration_ms, i.status_code,
              i.failure, i.error, i.state
         FROM input i JOIN updated u ON u.id = i.id
       ON CONFLICT DO NOTHING
     ), events AS (
       INSERT INTO outbox (topic, payload, headers, shard)
       SELECT e.topic, e.payload, e.headers, e.shard
         FROM json_to_recordset($2::json)
              AS e(delivery_id uuid, topic text, payload jsonb, headers jsonb, view boolean,
                   ord int, shard smallint)
         JOIN updated u ON u.id = e.delivery_id
         JOIN prior p ON p.id = e.delivery_id
        WHERE NOT e.view OR p.charged_at IS NULL
        ORDER BY e.ord
     )
     SELECT id FROM updated`,
    values: [JSON.stringify(input), JSON.stringify(events)],
  });
  return new Set(rows.map((row) => row.id));
}
