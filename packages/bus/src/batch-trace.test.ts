import { randomBytes } from "node:crypto";
import { trace } from "@opentelemetry/api";
import type { LeadViewRecorded } from "@th/contracts";
import { leadViewRecorded as sampleView } from "@th/contracts/samples";
import { inSpan } from "@th/telemetry";
import { recordSpans } from "@th/telemetry/testing";
import { afterAll, describe, expect, it, vi } from "vitest";
import { onBatch, type RunningConsumer } from "./bus.ts";
import { busFixture } from "./testing/fixture.ts";

const tracing = recordSpans("bus-batch-trace-test");
const kit = busFixture("bus-batch-trace-test");
let consumer: RunningConsumer | undefined;

afterAll(async () => {
  await consumer?.stop();
  await tracing.shutdown();
});

describe("batch spans", () => {
  it("continue the trace of the batch's first record and link the records of other traces", async () => {
    const contract = await kit.isolatedTopic(1);
    const view = (folio: string): LeadViewRecorded => ({ ...sampleView, tenant_id: "t", folio });
    const ingestTrace = await inSpan("ingest roll", {}, async (span) => {
      await kit.bus.publish(contract, [view("a"), view("b"), view("c")]);
      return span.spanContext().traceId;
    });
    const otherTrace = await inSpan("ingest other roll", {}, async (span) => {
      await kit.bus.publish(contract, view("d"));
      return span.spanContext().traceId;
    });

    const calls: { active: string | undefined; records: string[] }[] = [];
    consumer = await kit.bus.consume({
      group: `batch-trace-${randomBytes(4).toString("hex")}`,
      subscriptions: [
        onBatch(contract, async (records) => {
          calls.push({
            active: trace.getActiveSpan()?.spanContext().traceId,
            records: records.map((record) => record.headers.traceparent?.split("-")[1] ?? ""),
          });
          return undefined;
        }),
      ],
    });
    await vi.waitFor(() => expect(calls.flatMap((call) => call.records)).toHaveLength(4), {
      timeout: 15_000,
    });

    for (const call of calls) {
      expect(call.active).toBe(call.records[0]);
    }
    const batchSpans = tracing.spans().filter((span) => span.name === `consume ${contract.topic}`);
    expect(batchSpans).toHaveLength(calls.length);
    const reached = new Set(
      batchSpans.flatMap((span) => [
        span.spanContext().traceId,
        ...span.links.map((link) => link.context.traceId),
      ]),
    );
    expect(reached).toEqual(new Set([ingestTrace, otherTrace]));
  });
});
