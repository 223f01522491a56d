import {
  contracts,
  type DeadLetterReason,
  type DeliveryAttempted,
  type DeliveryDeadLetter,
  type DeliveryRetry,
  type FailureKind,
  type LeadViewRecorded,
  type TopicContract,
} from "@th/contracts";
import {
  type AttemptResult,
  DEAD_LETTER_AFTER_MS,
  delayBeforeAttempt,
  HOLD_MS,
  MAX_ATTEMPTS,
  retryStage,
  scaleLong,
  verdictOf,
} from "./schedule.ts";

/** One event for the outbox, written only if its delivery's row was updated under its lease. */
export interface OutboxEvent {
  delivery_id: string;
  topic: string;
  payload: unknown;
  /** The trace context the relay publishes the event in, or null. */
  headers: Record<string, string> | null;
  /**
   * A lead-view (`leadview.recorded`): written only by the attempt that marks its delivery
   * charged, so a delivery is charged once however often it is delivered.
   */
  view?: boolean;
}

function outboxEvent<T>(
  deliveryId: string,
  contract: TopicContract<T>,
  value: T,
  traceContext: Record<string, string>,
): OutboxEvent {
  return {
    delivery_id: deliveryId,
    topic: contract.topic,
    payload: value,
    headers: Object.keys(traceContext).length > 0 ? traceContext : null,
  };
}

/** What the outcome of an attempt needs to know of its delivery. */
export interface DeliveryFacts {
  id: string;
  endpoint_id: string;
  tenant_id: string;
  watchlist_id: string;
  match_id: string;
  folio: string;
  event_type: string;
  body: string;
  replay_no: number;
  first_attempted_at: Date | null;
}

/** Which delivery an event is about: the fields every delivery event starts with. */
function deliveryOf(
  row: DeliveryFacts,
): Pick<
  DeliveryAttempted,
  "delivery_id" | "endpoint_id" | "tenant_id" | "watchlist_id" | "match_id" | "folio"
> {
  return {
    delivery_id: row.id,
    endpoint_id: row.endpoint_id,
    tenant_id: row.tenant_id,
    watchlist_id: row.watchlist_id,
    match_id: row.match_id,
    folio: row.folio,
  };
}

/** A delivery's last attempt as a dead letter reports it. */
export interface DeadLetterFacts {
  attempts: number;
  status: number | null;
  failure: FailureKind | null;
  error: string | null;
  firstAttemptedAt: Date;
  lastAttemptedAt: Date;
  now: number;
}

export function deadLetterEvent(
  row: DeliveryFacts,
  reason: DeadLetterReason,
  facts: DeadLetterFacts,
): DeliveryDeadLetter {
  return {
    ...deliveryOf(row),
    event_type: row.event_type,
    payload_json: row.body,
    attempts: facts.attempts,
    replay_no: row.replay_no,
    reason,
    last_status_code: facts.status,
    last_failure: facts.failure,
    last_error: facts.error,
    first_attempted_at: facts.firstAttemptedAt.toISOString(),
    last_attempted_at: facts.lastAttemptedAt.toISOString(),
    dead_lettered_at: new Date(facts.now).toISOString(),
    hold_until: new Date(facts.now + HOLD_MS).toISOString(),
  };
}

export interface AttemptInput {
  delivery: DeliveryFacts;
  /** This attempt's number (1 for the first). */
  attempt: number;
  attemptedAt: Date;
  result: AttemptResult;
  /** When the outcome is decided (ms since the epoch). */
  now: number;
  /** How much the long retry stages shrink (1 in production). */
  longDelayScale: number;
  /** The trace context the attempt's events are published in. */
  trace: Record<string, string>;
  /** The lead-view this attempt records if it delivers, when it carries one. */
  view?: LeadViewRecorded;
}

/** An attempt's outcome: the delivery's next state, when it is due again, and its events. */
export interface Outcome {
  state: "complete" | "retrying" | "exhausted" | "dead_letter";
  /** When the delivery is due again: the next attempt, or an exhausted one's dead-lettering. */
  dueAt: Date | null;
  deadLetterReason: DeadLetterReason | null;
  statusCode: number | null;
  failure: FailureKind | null;
  error: string | null;
  events: OutboxEvent[];
}

/** What state an attempt leaves its delivery in, and when it is due again. */
function nextState(input: AttemptInput): Pick<Outcome, "state" | "dueAt" | "deadLetterReason"> {
  const { result, attempt, now, longDelayScale } = input;
  const verdict = verdictOf(result);
  if (verdict === "complete") {
    return { state: "complete", dueAt: null, deadLetterReason: null };
  }
  if (verdict === "dead_letter") {
    return {
      state: "dead_letter",
      dueAt: null,
      deadLetterReason: result.kind === "failure" ? "blocked_address" : "rejected_by_receiver",
    };
  }
  if (attempt < MAX_ATTEMPTS) {
    return {
      state: "retrying",
      dueAt: new Date(now + delayBeforeAttempt(attempt + 1, longDelayScale)),
      deadLetterReason: null,
    };
  }
  // The last attempt failed: the delivery is dead-lettered once the dead-letter delay has passed.
  return {
    state: "exhausted",
    dueAt: new Date(now + scaleLong(DEAD_LETTER_AFTER_MS, longDelayScale)),
    deadLetterReason: null,
  };
}

/**
 * The delivery state machine for one attempt: the attempt's result gives the delivery's next
 * state and due time, and the events its record writes (`delivery.attempted`; a retry stage's
 * record; a dead letter; a delivered attempt's lead-view).
 */
export function outcomeOf(input: AttemptInput): Outcome {
  const { delivery, result, attempt, attemptedAt, now, trace } = input;
  const { state, dueAt, deadLetterReason } = nextState(input);
  const statusCode = result.kind === "response" ? result.status : null;
  const failure: FailureKind | null =
    result.kind === "failure" ? result.failure : state === "complete" ? null : "http_status";
  const error =
    result.kind === "failure"
      ? result.error
      : state === "complete"
        ? null
        : `receiver answered ${result.status}`;
  const firstAttemptedAt = delivery.first_attempted_at ?? attemptedAt;
  const attempted: DeliveryAttempted = {
    ...deliveryOf(delivery),
    attempt,
    replay_no: delivery.replay_no,
    attempted_at: attemptedAt.toISOString(),
    duration_ms: result.durationMs,
    status_code: statusCode,
    failure,
    error,
    state: state === "exhausted" ? "dead_letter" : state,
    next_attempt_at: state === "retrying" && dueAt ? dueAt.toISOString() : null,
  };
  const events = [outboxEvent(delivery.id, contracts.deliveryAttempted, attempted, trace)];
  if (state === "retrying" && dueAt) {
    const retry: DeliveryRetry = {
      ...deliveryOf(delivery),
      event_type: delivery.event_type,
      payload_json: delivery.body,
      attempt: attempt + 1,
      replay_no: delivery.replay_no,
      due_at: dueAt.toISOString(),
      first_attempted_at: firstAttemptedAt.toISOString(),
      last_status_code: statusCode,
      last_failure: failure,
      last_error: error,
    };
    events.push(outboxEvent(delivery.id, retryStage(attempt + 1).contract, retry, trace));
  }
  if (state === "dead_letter" && deadLetterReason) {
    const dead = deadLetterEvent(delivery, deadLetterReason, {
      attempts: attempt,
      status: statusCode,
      failure,
      error,
      firstAttemptedAt,
      lastAttemptedAt: attemptedAt,
      now,
    });
    events.push(outboxEvent(delivery.id, contracts.deliveryDeadLetter, dead, trace));
  }
  if (state === "complete" && input.view) {
    events.push({
      ...outboxEvent(delivery.id, contracts.leadViewRecorded, input.view, trace),
      view: true,
    });
  }
  return {
    state,
    dueAt,
    deadLetterReason,
    statusCode,
    failure,
    error,
    events,
  };
}
