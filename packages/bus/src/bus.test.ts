import { randomBytes } from "node:crypto";
import {
  type LeadViewRecorded,
  parkedTopicOf,
  SCHEMA_HEADER,
  type TopicContract,
} from "@th/contracts";
import { leadViewRecorded as sampleView } from "@th/contracts/samples";
import { inSpan, startTelemetry } from "@th/telemetry";
import { afterAll, describe, expect, it, vi } from "vitest";
import { type Delivered, on, PARK_HEADERS } from "./bus.ts";
import { type Outcome, park, retryLater } from "./outcomes.ts";
import { ValueEncoder } from "./serde.ts";
import { busFixture } from "./testing/fixture.ts";

const kit = busFixture("bus-test");
const telemetry = startTelemetry({ service: "bus-test", enabled: true });
afterAll(() => telemetry.shutdown());

function view(tenant: string, folio: string): LeadViewRecorded {
  return { ...sampleView, tenant_id: tenant, folio };
}

async function consume(
  contract: TopicContract<LeadViewRecorded>,
  handler: (message: Delivered<LeadViewRecorded>) => Promise<Outcome | undefined>,
  maxAttempts?: number,
) {
  const group = `group-${randomBytes(4).toString("hex")}`;
  const consumer = await kit.bus.consume({
    group,
    subscriptions: [on(contract, handler)],
    ...(maxAttempts ? { maxAttempts } : {}),
  });
  kit.track(consumer);
  return group;
}

describe("bus", () => {
  it("provisions each topic with its partitions and a parking topic, idempotently", async () => {
    const contract = await kit.isolatedTopic(6);
    await kit.bus.provision([contract]);
    const metadata = await kit.admin.fetchTopicMetadata({
      topics: [contract.topic, parkedTopicOf(contract.topic)],
    });
    const partitions = Object.fromEntries(
      metadata.topics.map((topic) => [topic.name, topic.partitions.length]),
    );
    expect(partitions).toEqual({ [contract.topic]: 6, [parkedTopicOf(contract.topic)]: 1 });
  });

  it("delivers typed values with their key and schema header, in order per key", async () => {
    const contract = await kit.isolatedTopic();
    const received: Delivered<LeadViewRecorded>[] = [];
    await consume(contract, async (message) => {
      received.push(message);
      return undefined;
    });
    const values = Array.from({ length: 20 }, (_, i) => view(`tenant-${i % 2}`, `folio-${i}`));
    await kit.bus.publish(contract, values);
    await vi.waitFor(() => expect(received).toHaveLength(20), { timeout: 15_000 });
    expect(received[0]?.headers[SCHEMA_HEADER]).toBe(
      `${contract.schemaName}@${contract.fingerprint}`,
    );
    for (const tenant of ["tenant-0", "tenant-1"]) {
      const sent = values.filter((value) => value.tenant_id === tenant);
      const got = received
        .filter((message) => message.key === tenant)
        .map((message) => message.value);
      expect(got).toEqual(sent);
    }
  });

  it("delivers records encoded ahead of their publish as publish delivers their values", async () => {
    const contract = await kit.isolatedTopic(4);
    const received: Delivered<LeadViewRecorded>[] = [];
    await consume(contract, async (message) => {
      received.push(message);
      return undefined;
    });
    // One value larger than the buffer the encoder starts with, so it grows.
    const values = Array.from({ length: 12 }, (_, i) =>
      view(`tenant-${i % 3}`, i === 7 ? `folio-${"7".repeat(20_000)}` : `folio-${i}`),
    );
    const encoder = new ValueEncoder(contract, values.length);
    for (const value of values) {
      encoder.add(value);
    }
    await kit.bus.publishEncoded({
      contract,
      keys: values.map((value) => contract.keyOf(value)),
      values: encoder.views(),
    });
    await kit.bus.publish(contract, values);
    await vi.waitFor(() => expect(received).toHaveLength(24), { timeout: 15_000 });
    expect(new Set(received.map((message) => message.headers[SCHEMA_HEADER]))).toEqual(
      new Set([`${contract.schemaName}@${contract.fingerprint}`]),
    );
    for (const tenant of ["tenant-0", "tenant-1", "tenant-2"]) {
      const sent = values.filter((value) => value.tenant_id === tenant);
      const got = received.filter((message) => message.key === tenant);
      // The same partition as publish chose, and each value twice in order: encoded, then plain.
      expect(new Set(got.map((message) => message.partition)).size).toBe(1);
      expect(got.map((message) => message.value)).toEqual([...sent, ...sent]);
    }
    await expect(
      kit.bus.publishEncoded({ contract, keys: ["tenant-0"], values: [] }),
    ).rejects.toThrow(/1 keys for 0 values/);
  });

  it("commits a record's offset only after its handler has finished", async () => {
    const contract = await kit.isolatedTopic(1);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started = false;
    const group = await consume(contract, async () => {
      started = true;
      await gate;
      return undefined;
    });
    await kit.bus.publish(contract, view("t", "f1"));
    await vi.waitFor(() => expect(started).toBe(true), { timeout: 15_000 });
    await new Promise((resolve) => setTimeout(resolve, 500));
    const before = await kit.admin.fetchOffsets({ groupId: group, topics: [contract.topic] });
    expect(before[0]?.partitions[0]?.offset).toBe("-1");
    release();
    await vi.waitFor(
      async () => {
        const after = await kit.admin.fetchOffsets({ groupId: group, topics: [contract.topic] });
        expect(after[0]?.partitions[0]?.offset).toBe("1");
      },
      { timeout: 15_000 },
    );
  });

  it("redelivers a record whose handler throws, then parks it with the reason and goes on", async () => {
    const contract = await kit.isolatedTopic(1);
    const attempts: number[] = [];
    const handled: string[] = [];
    await consume(
      contract,
      async (message) => {
        if (message.value.folio === "bad") {
          attempts.push(message.attempt);
          throw new Error("downstream exploded");
        }
        handled.push(message.value.folio);
        return undefined;
      },
      3,
    );
    await kit.bus.publish(contract, [view("t", "bad"), view("t", "good")]);
    await vi.waitFor(() => expect(handled).toEqual(["good"]), { timeout: 20_000 });
    expect(attempts).toEqual([1, 2, 3]);
    const [parked] = await kit.parkedRecords(contract.topic, 1);
    expect(parked?.headers[PARK_HEADERS.reason]).toBe(
      "handler failed 3 times: downstream exploded",
    );
    expect(parked?.headers[PARK_HEADERS.from]).toBe(`${contract.topic}/0/0`);
    expect(parked?.headers[SCHEMA_HEADER]).toBeDefined();
  });

  it("parks poison records without calling the handler and keeps consuming", async () => {
    const contract = await kit.isolatedTopic(1);
    const handled: string[] = [];
    await consume(contract, async (message) => {
      handled.push(message.value.folio);
      return undefined;
    });
    const producer = kit.raw.producer();
    await producer.connect();
    await producer.send({
      topic: contract.topic,
      messages: [{ key: "t", value: Buffer.from("not avro at all"), headers: {} }],
    });
    await producer.disconnect();
    await kit.bus.publish(contract, view("t", "after-poison"));
    await vi.waitFor(() => expect(handled).toEqual(["after-poison"]), { timeout: 15_000 });
    const [parked] = await kit.parkedRecords(contract.topic, 1);
    expect(parked?.value?.toString()).toBe("not avro at all");
    expect(parked?.headers[PARK_HEADERS.reason]).toMatch(
      /^cannot decode as th\.usage\.LeadViewRecorded/,
    );
  });

  it("parks a record when the handler says it can never succeed", async () => {
    const contract = await kit.isolatedTopic(1);
    await consume(contract, async () => park("watchlist was deleted"));
    await kit.bus.publish(contract, view("t", "f"));
    const [parked] = await kit.parkedRecords(contract.topic, 1);
    expect(parked?.headers[PARK_HEADERS.reason]).toBe("watchlist was deleted");
  });

  it("pauses and offers the same record again when the handler asks to retry later", async () => {
    const contract = await kit.isolatedTopic(1);
    const seen: string[] = [];
    await consume(contract, async (message) => {
      seen.push(`${message.value.folio}@${message.offset}`);
      return seen.length === 1 ? retryLater(200, "quota not yet reset") : undefined;
    });
    await kit.bus.publish(contract, [view("t", "a"), view("t", "b")]);
    await vi.waitFor(() => expect(seen).toEqual(["a@0", "a@0", "b@1"]), { timeout: 15_000 });
  });

  it("reports each consumer group's lag per partition until its records are done", async () => {
    const contract = await kit.isolatedTopic(1);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const group = await consume(contract, async () => {
      await gate;
      return undefined;
    });
    await kit.bus.publish(contract, [view("t", "a"), view("t", "b"), view("t", "c")]);
    const lagOf = async () =>
      (await kit.bus.consumerLag()).find(
        (row) => row.group === group && row.topic === contract.topic,
      )?.lag;
    expect(await lagOf()).toBe(3);
    release();
    await vi.waitFor(async () => expect(await lagOf()).toBe(0), { timeout: 15_000 });
  });

  it("carries the producer's trace context to the handler in headers", async () => {
    const contract = await kit.isolatedTopic(1);
    const headers: Record<string, string>[] = [];
    await consume(contract, async (message) => {
      headers.push(message.headers);
      return undefined;
    });
    const traceId = await inSpan("ingest", {}, async (span) => {
      await kit.bus.publish(contract, view("t", "traced"));
      return span.spanContext().traceId;
    });
    await vi.waitFor(() => expect(headers).toHaveLength(1), { timeout: 15_000 });
    expect(headers[0]?.traceparent).toContain(traceId);
  });
});
