import { contracts, type LeadViewRecorded } from "@th/contracts";
import { describe, expect, it } from "vitest";
import { type AttemptInput, deadLetterEvent, outcomeOf } from "./outcome.ts";
import type { AttemptResult } from "./schedule.ts";

const NOW = Date.parse("2026-12-01T10:00:00.000Z");
const delivery = {
  id: "6f1c2b1e-0000-4000-8000-000000000001",
  endpoint_id: "ep_1",
  tenant_id: "ten_1",
  watchlist_id: "wl_1",
  match_id: "m_1",
  folio: "23-A1",
  event_type: "match.found",
  body: '{"folio":"23-A1"}',
  replay_no: 0,
  first_attempted_at: null,
};
const ok: AttemptResult = { kind: "response", status: 204, durationMs: 12 };
const view: LeadViewRecorded = {
  tenant_id: "ten_1",
  folio: "23-A1",
  day: "2026-12-01",
  billing_period_start: "2026-11-21",
  surface: "webhook",
  request_id: delivery.id,
  key_id: null,
  member_id: null,
  recorded_at: new Date(NOW).toISOString(),
};

function attempt(overrides: Partial<AttemptInput>) {
  return outcomeOf({
    delivery,
    attempt: 1,
    attemptedAt: new Date(NOW - 50),
    result: ok,
    now: NOW,
    longDelayScale: 1,
    trace: {},
    ...overrides,
  });
}

const topics = (outcome: ReturnType<typeof outcomeOf>) => outcome.events.map((e) => e.topic);

describe("the outcome of a delivery attempt", () => {
  it("completes on a 2xx and writes the attempt and the lead-view it carries, marked as the view", () => {
    const outcome = attempt({ view });
    expect(outcome).toMatchObject({ state: "complete", dueAt: null, failure: null, error: null });
    expect(topics(outcome)).toEqual([
      contracts.deliveryAttempted.topic,
      contracts.leadViewRecorded.topic,
    ]);
    expect(outcome.events[1]).toMatchObject({ payload: view, view: true });
  });

  it("writes no lead-view for an attempt that did not deliver, even when it carries one", () => {
    const outcome = attempt({
      view,
      result: { kind: "response", status: 503, durationMs: 5 },
    });
    expect(topics(outcome)).not.toContain(contracts.leadViewRecorded.topic);
  });

  it("retries a 5xx after the next stage's delay and writes that stage's retry record", () => {
    const outcome = attempt({
      attempt: 2,
      result: { kind: "response", status: 503, durationMs: 5 },
    });
    expect(outcome.state).toBe("retrying");
    expect(outcome.dueAt).toEqual(new Date(NOW + 5_000));
    expect(outcome).toMatchObject({
      statusCode: 503,
      failure: "http_status",
      error: "receiver answered 503",
    });
    expect(topics(outcome)).toEqual([
      contracts.deliveryAttempted.topic,
      contracts.deliveryRetry5s.topic,
    ]);
    expect(outcome.events[0]?.payload).toMatchObject({
      state: "retrying",
      next_attempt_at: new Date(NOW + 5_000).toISOString(),
    });
    expect(outcome.events[1]?.payload).toMatchObject({
      attempt: 3,
      due_at: "2026-12-01T10:00:05.000Z",
    });
  });

  it("scales the long retry stages", () => {
    const outcome = attempt({
      attempt: 3,
      longDelayScale: 0.01,
      result: { kind: "failure", failure: "timeout", error: "no response", durationMs: 5 },
    });
    expect(outcome.dueAt).toEqual(new Date(NOW + 300));
  });

  it("leaves the last failed attempt exhausted, due for its dead letter after the delay, reported as dead-lettered", () => {
    const outcome = attempt({
      attempt: 5,
      result: { kind: "failure", failure: "network", error: "connection reset", durationMs: 5 },
    });
    expect(outcome.state).toBe("exhausted");
    expect(outcome.dueAt).toEqual(new Date(NOW + 30 * 60_000));
    expect(topics(outcome)).toEqual([contracts.deliveryAttempted.topic]);
    expect(outcome.events[0]?.payload).toMatchObject({
      state: "dead_letter",
      next_attempt_at: null,
    });
  });

  it("dead-letters a 4xx at once as rejected by the receiver, with its dead-letter event", () => {
    const outcome = attempt({
      result: { kind: "response", status: 410, durationMs: 5 },
    });
    expect(outcome).toMatchObject({
      state: "dead_letter",
      dueAt: null,
      deadLetterReason: "rejected_by_receiver",
    });
    expect(topics(outcome)).toEqual([
      contracts.deliveryAttempted.topic,
      contracts.deliveryDeadLetter.topic,
    ]);
    expect(outcome.events[1]?.payload).toMatchObject({
      reason: "rejected_by_receiver",
      attempts: 1,
      last_status_code: 410,
      first_attempted_at: new Date(NOW - 50).toISOString(),
    });
  });

  it("dead-letters a blocked address at once", () => {
    const outcome = attempt({
      result: { kind: "failure", failure: "blocked_address", error: "private", durationMs: 0 },
    });
    expect(outcome).toMatchObject({ state: "dead_letter", deadLetterReason: "blocked_address" });
  });

  it("publishes the events in the attempt's trace and names their delivery", () => {
    const trace = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" };
    const outcome = attempt({ trace });
    expect(outcome.events[0]).toMatchObject({ delivery_id: delivery.id, headers: trace });
    expect(attempt({}).events[0]?.headers).toBeNull();
  });
});

describe("a dead letter", () => {
  it("is held for thirty days from the moment it is dead-lettered", () => {
    const dead = deadLetterEvent(delivery, "attempts_exhausted", {
      attempts: 5,
      status: null,
      failure: "network",
      error: "connection reset",
      firstAttemptedAt: new Date(NOW - 60_000),
      lastAttemptedAt: new Date(NOW - 1_000),
      now: NOW,
    });
    expect(dead).toMatchObject({
      reason: "attempts_exhausted",
      dead_lettered_at: new Date(NOW).toISOString(),
      hold_until: new Date(NOW + 30 * 86_400_000).toISOString(),
    });
  });
});
