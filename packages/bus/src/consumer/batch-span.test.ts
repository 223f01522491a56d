import { recordSpans } from "@th/telemetry/testing";
import { afterAll, describe, expect, it } from "vitest";
import { batchTraceOf, inBatchSpan, MAX_SPAN_LINKS } from "./batch-span.ts";

// The SDK registers the W3C propagator that reads `traceparent`.
const tracing = recordSpans("bus-batch-span-test");
afterAll(() => tracing.shutdown());

const traceId = (n: number) => n.toString(16).padStart(32, "0");
const spanId = (n: number) => n.toString(16).padStart(16, "0");
const traced = (trace: number, span: number) => ({
  traceparent: `00-${traceId(trace)}-${spanId(span)}-01`,
});

describe("batchTraceOf", () => {
  it("has no parent and no links when no record is traced", () => {
    const where = batchTraceOf([{}, { other: "x" }]);
    expect(where.parent).toBeUndefined();
    expect(where.links).toEqual([]);
  });

  it("continues the first traced record's trace and links records of other traces only", () => {
    const where = batchTraceOf([{}, traced(1, 1), traced(1, 2), traced(2, 3), traced(3, 4)]);
    expect(where.parent).toBeDefined();
    expect(where.links.map((link) => link.context.traceId)).toEqual([traceId(2), traceId(3)]);
  });

  it(`links at most ${MAX_SPAN_LINKS} records`, () => {
    const headers = Array.from({ length: MAX_SPAN_LINKS + 10 }, (_, index) => traced(index + 1, 1));
    expect(batchTraceOf(headers).links).toHaveLength(MAX_SPAN_LINKS);
  });
});

describe("inBatchSpan", () => {
  it("runs the work in a span of the parent's trace with the links, and marks a failure", async () => {
    tracing.reset();
    const where = batchTraceOf([traced(7, 1), traced(8, 2)]);
    await expect(
      inBatchSpan("consume t", { "messaging.destination": "t" }, where, async () => {
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    const [span] = tracing.spans();
    expect(span?.name).toBe("consume t");
    expect(span?.spanContext().traceId).toBe(traceId(7));
    expect(span?.links.map((link) => link.context.traceId)).toEqual([traceId(8)]);
    expect(span?.status.code).toBe(2);
  });
});
