import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { LeadViewRecorded, TopicContract } from "@th/contracts";
import { leadViewRecorded as sampleView } from "@th/contracts/samples";
import { inSpan, startTelemetry } from "@th/telemetry";
import { afterAll, describe, expect, it, vi } from "vitest";
import { type BatchHandler, onBatch, PARK_HEADERS } from "./bus.ts";
import { park } from "./outcomes.ts";
import { busFixture } from "./testing/fixture.ts";

const CRASHING_CONSUMER = fileURLToPath(new URL("./testing/crashing-consumer.ts", import.meta.url));
const kit = busFixture("bus-batch-test");
const telemetry = startTelemetry({ service: "bus-batch-test", enabled: true });
afterAll(() => telemetry.shutdown());

function view(folio: string): LeadViewRecorded {
  return { ...sampleView, tenant_id: "t", folio };
}

function newGroup(): string {
  return `batch-${randomBytes(4).toString("hex")}`;
}

async function consumeBatches(
  contract: TopicContract<LeadViewRecorded>,
  handler: BatchHandler<LeadViewRecorded>,
  options: { group?: string; maxAttempts?: number } = {},
) {
  const group = options.group ?? newGroup();
  const consumer = await kit.bus.consume({
    group,
    subscriptions: [onBatch(contract, handler)],
    ...(options.maxAttempts ? { maxAttempts: options.maxAttempts } : {}),
  });
  kit.track(consumer);
  return { group, consumer };
}

async function committed(group: string, topic: string): Promise<string | undefined> {
  const [offsets] = await kit.admin.fetchOffsets({ groupId: group, topics: [topic] });
  return offsets?.partitions[0]?.offset;
}

describe("bus batch consumers (onBatch)", () => {
  it("hands over a fetched batch and commits its offsets only after the handler finished", async () => {
    const contract = await kit.isolatedTopic(1);
    await kit.bus.publish(contract, [view("a"), view("b"), view("c")]);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const batches: string[][] = [];
    const { group, consumer } = await consumeBatches(contract, async (records) => {
      batches.push(records.map((record) => record.value.folio));
      await gate;
      return undefined;
    });
    await vi.waitFor(() => expect(batches).toEqual([["a", "b", "c"]]), { timeout: 15_000 });
    expect(await consumer.waitUntilProcessed(contract.topic, 0, "3", { timeoutMs: 500 })).toBe(
      false,
    );
    expect(await committed(group, contract.topic)).toBe("-1");
    release();
    expect(await consumer.waitUntilProcessed(contract.topic, 0, "3", { timeoutMs: 10_000 })).toBe(
      true,
    );
    await vi.waitFor(async () => expect(await committed(group, contract.topic)).toBe("3"), {
      timeout: 15_000,
    });
  });

  it("parks the poison and unjudgeable records of a batch with their reasons while the rest are done", async () => {
    const contract = await kit.isolatedTopic(1);
    await kit.bus.publish(contract, view("good-1"));
    const producer = kit.raw.producer();
    await producer.connect();
    await producer.send({
      topic: contract.topic,
      messages: [{ key: "t", value: Buffer.from("not avro at all"), headers: {} }],
    });
    await producer.disconnect();
    await kit.bus.publish(contract, [view("unjudgeable"), view("good-2")]);
    const handled: string[] = [];
    const { group } = await consumeBatches(contract, async (records) =>
      records.map((record) => {
        if (record.value.folio === "unjudgeable") {
          return park("folio cannot be judged");
        }
        handled.push(record.value.folio);
        return undefined;
      }),
    );
    await vi.waitFor(async () => expect(await committed(group, contract.topic)).toBe("4"), {
      timeout: 15_000,
    });
    expect(handled).toEqual(["good-1", "good-2"]);
    const parked = await kit.parkedRecords(contract.topic, 2);
    expect(
      parked.map((record) => [
        record.headers[PARK_HEADERS.from],
        record.headers[PARK_HEADERS.reason],
      ]),
    ).toEqual([
      [
        `${contract.topic}/0/1`,
        expect.stringMatching(/^cannot decode as th\.usage\.LeadViewRecorded/),
      ],
      [`${contract.topic}/0/2`, "folio cannot be judged"],
    ]);
    expect(parked[0]?.value?.toString()).toBe("not avro at all");
  });

  it("retries a throwing batch whole, then isolates and parks only the record that keeps failing", async () => {
    const contract = await kit.isolatedTopic(1);
    await kit.bus.publish(contract, [view("a"), view("bad"), view("b")]);
    const calls: { folios: string[]; attempt: number }[] = [];
    const done: string[] = [];
    const { group } = await consumeBatches(
      contract,
      async (records) => {
        calls.push({
          folios: records.map((record) => record.value.folio),
          attempt: records[0]?.attempt ?? 0,
        });
        if (records.some((record) => record.value.folio === "bad")) {
          throw new Error("downstream exploded");
        }
        done.push(...records.map((record) => record.value.folio));
        return undefined;
      },
      { maxAttempts: 3 },
    );
    await vi.waitFor(async () => expect(await committed(group, contract.topic)).toBe("3"), {
      timeout: 30_000,
    });
    expect(calls).toEqual([
      { folios: ["a", "bad", "b"], attempt: 1 },
      { folios: ["a", "bad", "b"], attempt: 2 },
      { folios: ["a", "bad", "b"], attempt: 3 },
      { folios: ["a"], attempt: 1 },
      { folios: ["bad"], attempt: 1 },
      { folios: ["bad"], attempt: 2 },
      { folios: ["bad"], attempt: 3 },
      { folios: ["b"], attempt: 1 },
    ]);
    expect(done).toEqual(["a", "b"]);
    const [parked] = await kit.parkedRecords(contract.topic, 1);
    expect(parked?.headers[PARK_HEADERS.from]).toBe(`${contract.topic}/0/1`);
    expect(parked?.headers[PARK_HEADERS.reason]).toBe(
      "handler failed 3 times: downstream exploded",
    );
    // Past the failed batch, records are batched again.
    await kit.bus.publish(contract, [view("c"), view("d")]);
    await vi.waitFor(() => expect(calls.at(-1)?.folios).toEqual(["c", "d"]), { timeout: 15_000 });
  });

  it("redelivers the whole batch to the group when its consumer crashed after the effect, before the commit", async () => {
    const contract = await kit.isolatedTopic(1);
    await kit.bus.publish(contract, [view("a"), view("b"), view("c")]);
    const group = newGroup();
    const child = spawn(
      process.execPath,
      [CRASHING_CONSUMER, kit.brokers[0] as string, contract.topic, group],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const firstLine = await new Promise<string>((resolve) =>
      createInterface({ input: child.stdout }).once("line", resolve),
    );
    expect(JSON.parse(firstLine)).toEqual(["0", "1", "2"]);
    expect(await exited).toBeDefined();
    expect(await committed(group, contract.topic)).toBe("-1");

    const redelivered: string[][] = [];
    await consumeBatches(
      contract,
      async (records) => {
        redelivered.push(records.map((record) => record.offset));
        return undefined;
      },
      { group },
    );
    await vi.waitFor(async () => expect(await committed(group, contract.topic)).toBe("3"), {
      timeout: 30_000,
    });
    expect(redelivered.flat()).toEqual(["0", "1", "2"]);
  });

  it("gives each record of a batch the trace context it was published with", async () => {
    const contract = await kit.isolatedTopic(1);
    const traceIds: string[] = [];
    for (const folio of ["a", "b"]) {
      traceIds.push(
        await inSpan(`ingest ${folio}`, {}, async (span) => {
          await kit.bus.publish(contract, view(folio));
          return span.spanContext().traceId;
        }),
      );
    }
    const traceparents: string[] = [];
    await consumeBatches(contract, async (records) => {
      traceparents.push(...records.map((record) => record.headers.traceparent ?? ""));
      return undefined;
    });
    await vi.waitFor(() => expect(traceparents).toHaveLength(2), { timeout: 15_000 });
    expect(traceparents[0]).toContain(traceIds[0]);
    expect(traceparents[1]).toContain(traceIds[1]);
  });
});
