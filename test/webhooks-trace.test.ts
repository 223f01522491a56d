// Observability, the delivery half of the trace: a delivery keeps the trace context of the
// match.found record it came from, and every attempt is its own span of that trace whose
// traceparent the receiver gets.
import { inSpan } from "@th/telemetry";
import { recordSpans } from "@th/telemetry/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Receiver,
  startReceiver,
  startWebhookStack,
  type WebhookStack,
  waitFor,
} from "./support/webhook-stack.ts";

// Registered before the dispatcher starts, so its spans are recorded and its context propagates.
const tracing = recordSpans("webhooks-trace");

let stack: WebhookStack;
let receiver: Receiver;
const TENANT = "tn_traced";

beforeAll(async () => {
  stack = await startWebhookStack();
  await stack.startDispatcher();
  await stack.publishTenant(TENANT, "team");
  await stack.tenantApplied(TENANT);
  // The first attempt fails, so the delivery is attempted twice.
  receiver = await startReceiver(({ seen }) => (seen === 1 ? 503 : 200));
});

afterAll(async () => {
  await receiver?.close();
  await stack?.close();
  await tracing.shutdown();
});

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

describe("the delivery half of the trace", () => {
  it("sends each attempt with a traceparent of the match.found record's trace, one span per attempt", async () => {
    await stack.subscribe(TENANT, "wl_traced", receiver.url);
    const match = stack.match(TENANT, "wl_traced");
    // The record is published inside a span, as the matcher publishes it inside its own.
    const traceId = await inSpan("match", {}, async (span) => {
      await stack.publishMatches([match]);
      return span.spanContext().traceId;
    });
    const delivery = await waitFor(
      async () => {
        const row = (
          await stack.pool.query(
            "SELECT id, state, trace_context FROM dispatcher.deliveries WHERE match_id = $1",
            [match.match_id],
          )
        ).rows[0];
        return row?.state === "complete" ? row : undefined;
      },
      { what: "the delivery to complete after a retry" },
    );
    expect(delivery.trace_context.traceparent).toMatch(TRACEPARENT);
    const recordSpanId = TRACEPARENT.exec(delivery.trace_context.traceparent)?.[2];

    const requests = receiver.of(delivery.id);
    expect(requests).toHaveLength(2);
    const sent = requests.map((request) => TRACEPARENT.exec(request.traceparent ?? ""));
    for (const parsed of sent) {
      expect(parsed?.[1]).toBe(traceId);
    }
    // Each attempt is its own span: two different span ids, both children of the record's.
    expect(sent[0]?.[2]).not.toBe(sent[1]?.[2]);
    const attempts = await waitFor(
      () => {
        const spans = tracing
          .spans()
          .filter(
            (span) => span.name === "webhook POST" && span.attributes["webhook.id"] === delivery.id,
          );
        return spans.length === 2 ? spans : undefined;
      },
      { what: "two attempt spans" },
    );
    for (const span of attempts) {
      expect(span.spanContext().traceId).toBe(traceId);
      expect(span.parentSpanContext?.spanId).toBe(recordSpanId);
    }
    expect(new Set(attempts.map((span) => span.spanContext().spanId))).toEqual(
      new Set(sent.map((parsed) => parsed?.[2])),
    );
  });
});
