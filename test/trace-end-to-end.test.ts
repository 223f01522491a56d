// Observability: one OpenTelemetry trace from a NAL ingest through matching and webhook delivery
// to the receiver. Context travels in Kafka headers between services, in the outbox rows and the
// delivery rows in between, and in a `traceparent` header on the webhook request.
import { type ReadableSpan, recordSpans } from "@th/telemetry/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type EdgeDispatcher, startEdgeDispatcher } from "./support/edge-dispatcher.ts";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

// Registered before any service starts, so every span of this process is recorded.
const tracing = recordSpans("trace-end-to-end");

let stack: EdgeStack;
let edge: EdgeDispatcher;

beforeAll(async () => {
  stack = await startEdgeStack();
  edge = await startEdgeDispatcher(stack);
});

afterAll(async () => {
  await edge?.close();
  await stack?.close();
  await tracing.shutdown();
});

function traceIdOf(traceparent: string | string[] | undefined): string | undefined {
  return typeof traceparent === "string" ? traceparent.split("-")[1] : undefined;
}

describe("one trace from ingest to the receiver", () => {
  it("carries the ingest's trace through matching and delivery to the webhook's traceparent", async () => {
    const operator = await stack.startTrial("operator");
    const created = await stack.request("POST", "/v1/watchlists", {
      key: operator.key,
      body: {
        name: "Everything in Broward",
        recipe: { filters: { counties: [23] }, signals: { high_equity: 1 }, min_score: 0 },
      },
    });
    expect(created.statusCode, created.body).toBe(201);
    const watchlistId = created.json().id as string;

    await edge.subscribe(operator, watchlistId);

    tracing.reset();
    await stack.ingestSample();
    await vi.waitFor(() => expect(edge.received.length).toBeGreaterThan(0), {
      timeout: 30_000,
      interval: 50,
    });

    const ingestSpans = tracing.spans().filter((span) => span.name.startsWith("ingest "));
    expect(ingestSpans).toHaveLength(1);
    const ingestSpan = ingestSpans[0] as ReadableSpan;
    const traceId = ingestSpan.spanContext().traceId;
    expect(ingestSpan.parentSpanContext).toBeUndefined();

    const delivered = edge.received.map(({ headers }) => traceIdOf(headers.traceparent));
    expect(delivered.every((id) => id === traceId)).toBe(true);

    // Each service's work is part of that trace: matching, the match's intake, the POST itself.
    await vi.waitFor(
      () => {
        const names = tracing
          .spans()
          .filter((span) => span.spanContext().traceId === traceId)
          .map((span) => span.name);
        expect(names).toEqual(
          expect.arrayContaining([
            expect.stringMatching(/parcel\.ingested/),
            expect.stringMatching(/match\.found/),
            expect.stringMatching(/^webhook POST/),
          ]),
        );
      },
      { timeout: 10_000 },
    );
    const post = tracing
      .spans()
      .find(
        (span) => span.name.startsWith("webhook POST") && span.spanContext().traceId === traceId,
      );
    // The receiver's traceparent names the POST span itself, so its spans nest under it.
    const postSpanIds = new Set(
      edge.received.map(({ headers }) => (headers.traceparent as string).split("-")[2]),
    );
    expect(postSpanIds.has(post?.spanContext().spanId as string)).toBe(true);
  });
});
