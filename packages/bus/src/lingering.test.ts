// Publishes that share a produce request, as callers racing them would try it: many at once cost
// one request and each resolves only once acknowledged; one given up before its request left is
// never sent; one whose time runs out while the broker holds the acknowledgement is answered at
// once as possibly sent, while the others in its request still resolve once acknowledged.
import { randomBytes } from "node:crypto";
import { contracts, type LeadViewRecorded } from "@th/contracts";
import { leadViewRecorded as sampleView } from "@th/contracts/samples";
import { ApiKey, type RunningBroker, startBroker } from "@th/dev-broker";
import { createLogger } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Bus } from "./bus.ts";
import { PublishTimeoutError } from "./lingering.ts";
import { PublishAbortedError } from "./producer.ts";

let broker: RunningBroker;
let bus: Bus;
let produces = 0;
/** How long the broker holds each produce answer. */
let holdMs = 0;

beforeAll(async () => {
  broker = await startBroker({
    port: 0,
    logLevel: "error",
    onRequest: (entry) => {
      if (entry.apiKey === ApiKey.Produce) {
        produces++;
      }
    },
    produceAckDelayMs: () => holdMs,
  });
  bus = new Bus({
    brokers: broker.brokers,
    clientId: "lingering-test",
    logger: createLogger({ service: "lingering-test", level: "silent" }),
  });
});
afterAll(async () => {
  await bus?.close();
  await broker?.stop();
});

async function isolatedTopic() {
  const contract = {
    ...contracts.leadViewRecorded,
    topic: `lingering.${randomBytes(4).toString("hex")}`,
    partitions: 1,
  };
  await bus.provision([contract]);
  return contract;
}

const view = (folio: string): LeadViewRecorded => ({ ...sampleView, folio, request_id: folio });

async function folios(contract: { topic: string }): Promise<string[]> {
  const found: string[] = [];
  await bus.replay(contract as typeof contracts.leadViewRecorded, {
    onBatch: async (records) => {
      found.push(...records.map((record) => (record.value as LeadViewRecorded).folio));
    },
  });
  return found.sort();
}

describe("publishes that share a produce request", () => {
  it("sends the publishes of one turn in one produce request, and each resolves once it is in the log", async () => {
    const contract = await isolatedTopic();
    const publisher = bus.lingering(contract, { lingerMs: 0 });
    await publisher.publish([view("warm")]);
    produces = 0;
    await Promise.all(
      Array.from({ length: 20 }, (_, index) => publisher.publish([view(`f${index}`)])),
    );
    expect(produces).toBe(1);
    expect(await folios(contract)).toHaveLength(21);
  });

  it("never sends a publish given up while it lingered, and sends the others", async () => {
    const contract = await isolatedTopic();
    const publisher = bus.lingering(contract, { lingerMs: 50 });
    const gone = new AbortController();
    const kept = publisher.publish([view("kept")]);
    const dropped = publisher.publish([view("dropped")], { signal: gone.signal });
    gone.abort();
    await expect(dropped).rejects.toMatchObject({ name: "PublishAbortedError", sent: false });
    await kept;
    expect(await folios(contract)).toEqual(["kept"]);
  });

  it("answers a publish whose time ran out with the broker holding its acknowledgement at once, as possibly sent, and the others of its request once acknowledged", async () => {
    const contract = await isolatedTopic();
    const publisher = bus.lingering(contract, { lingerMs: 0 });
    await publisher.publish([view("warm")]);
    holdMs = 800;
    try {
      const started = Date.now();
      const late = publisher.publish([view("late")], { timeoutMs: 200 });
      const patient = publisher.publish([view("patient")], { timeoutMs: 5_000 });
      const error = await late.catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(PublishTimeoutError);
      expect(error).toMatchObject({ sent: true });
      expect(Date.now() - started).toBeLessThan(700);
      await patient;
      expect(Date.now() - started).toBeGreaterThanOrEqual(700);
    } finally {
      holdMs = 0;
    }
    // The late one may be in the log (a void covers it); the patient one is.
    expect(await folios(contract)).toEqual(expect.arrayContaining(["patient", "warm"]));
  });

  it("gives the request up when every publish in it was given up", async () => {
    const contract = await isolatedTopic();
    const publisher = bus.lingering(contract, { lingerMs: 0 });
    const gone = new AbortController();
    const only = publisher.publish([view("alone")], { signal: gone.signal });
    await new Promise((resolve) => setImmediate(resolve));
    gone.abort();
    await expect(only).rejects.toBeInstanceOf(PublishAbortedError);
  });

  it("sends a lone publish at once whatever the linger, and lets publishes made while a request is unanswered wait for it and share the next", async () => {
    const contract = await isolatedTopic();
    const publisher = bus.lingering(contract, { lingerMs: 5_000 });
    await publisher.publish([view("warm")]);
    const started = Date.now();
    await publisher.publish([view("lone")]);
    expect(Date.now() - started).toBeLessThan(1_000);
    holdMs = 300;
    try {
      produces = 0;
      const first = publisher.publish([view("first")]);
      await new Promise((resolve) => setTimeout(resolve, 50));
      holdMs = 0;
      const waiting = [publisher.publish([view("second")]), publisher.publish([view("third")])];
      await Promise.all([first, ...waiting]);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(produces).toBe(2);
    } finally {
      holdMs = 0;
    }
    expect(await folios(contract)).toEqual(["first", "lone", "second", "third", "warm"]);
  });
});
