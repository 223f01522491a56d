import { randomBytes } from "node:crypto";
import { trace } from "@opentelemetry/api";
import { contracts, type LeadViewRecorded } from "@th/contracts";
import { leadViewRecorded as sampleView } from "@th/contracts/samples";
import { startBroker } from "@th/dev-broker";
import { createLogger, inSpan } from "@th/telemetry";
import { recordSpans } from "@th/telemetry/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Bus, onBatch, type RunningConsumer } from "./bus.ts";

const tracing = recordSpans("bus-batch-trace-test");
let broker: Awaited<ReturnType<typeof startBroker>>;
let bus: Bus;
let consumer: RunningConsumer | undefined;

beforeAll(async () => {
  broker = await startBroker({ port: 0 });
  bus = new Bus({
    brokers: broker.brokers,
    clientId: "bus-batch-trace-test",
    logger: createLogger({ service: "bus-batch-trace-test", level: "silent" }),
    consumerTimings: { sessionTimeout: 6000, heartbeatInterval: 300, maxWaitTimeInMs: 100 },
  });
});

afterAll(async () => {
  await consumer?.stop();
  await bus.close();
  await broker.stop();
  await tracing.shutdown();
});

describe("batch spans", () => {
  it("continue the trace of the batch's first record and link the records of other traces", async () => {
    const contract = {
      ...contracts.leadViewRecorded,
      topic: `bus-batch-trace.${randomBytes(4).toString("hex")}`,
      partitions: 1,
    };
    await bus.provision([contract]);
    const view = (folio: string): LeadViewRecorded => ({ ...sampleView, tenant_id: "t", folio });
    const ingestTrace = await inSpan("ingest roll", {}, async (span) => {
      await bus.publish(contract, [view("a"), view("b"), view("c")]);
      return span.spanContext().traceId;
    });
    const otherTrace = await inSpan("ingest other roll", {}, async (span) => {
      await bus.publish(contract, view("d"));
      return span.spanContext().traceId;
    });

    const calls: { active: string | undefined; records: string[] }[] = [];
    consumer = await bus.consume({
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
