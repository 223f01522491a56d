// A consumer whose broker is killed (kill -9) and started again on the same log directory: the
// process is not restarted, yet its consumer rejoins its group and goes on consuming, and every
// record published before, around and after the outage is handled at least once.
import { randomBytes } from "node:crypto";
import { contracts, type LeadViewRecorded } from "@th/contracts";
import { leadViewRecorded as sampleView } from "@th/contracts/samples";
import { type BrokerProcess, startBrokerProcess } from "@th/dev-broker/testing";
import { createLogger } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Bus, on } from "./bus.ts";
import { TEST_TIMINGS } from "./testing/fixture.ts";

let broker: BrokerProcess;
let consumerBus: Bus;
let producerBus: Bus;

const newBus = (clientId: string) =>
  new Bus({
    brokers: broker.brokers,
    clientId,
    logger: createLogger({ service: clientId, level: "silent" }),
    consumerTimings: TEST_TIMINGS,
  });

beforeAll(async () => {
  broker = await startBrokerProcess();
  consumerBus = newBus("rejoin-consumer");
  producerBus = newBus("rejoin-producer");
});

afterAll(async () => {
  await consumerBus?.close();
  await producerBus?.close();
  await broker?.destroy();
});

const views = (prefix: string, count: number): LeadViewRecorded[] =>
  Array.from({ length: count }, (_, index) => ({
    ...sampleView,
    tenant_id: `tn_${index % 5}`,
    folio: `${prefix}-${index}`,
  }));

describe("a consumer whose broker is killed and restarted", () => {
  it("rejoins its group without a process restart and handles every record at least once", async () => {
    const contract = {
      ...contracts.leadViewRecorded,
      topic: `rejoin.${randomBytes(4).toString("hex")}`,
      partitions: 3,
    };
    await producerBus.provision([contract]);
    const handled = new Set<string>();
    const running = await consumerBus.consume({
      group: `rejoin-${randomBytes(4).toString("hex")}`,
      subscriptions: [
        on(contract, async ({ value }) => {
          handled.add(value.folio);
          return undefined;
        }),
      ],
    });
    try {
      const before = views("before", 30);
      await producerBus.publish(contract, before);
      await vi.waitFor(() => expect(handled.size).toBe(30), { timeout: 15_000 });

      // Down for longer than the group's session timeout, so the broker has forgotten the
      // member: kafkajs restarts on connection errors, and the bus rejoins after any other crash.
      await broker.kill();
      await new Promise((resolve) => setTimeout(resolve, 7_000));
      await broker.start();
      const backAt = Date.now();
      // Published as soon as the broker answers again, while the consumer is still finding its
      // way back: none of these may be skipped by a rejoin that starts from the log's end.
      const after = views("after", 30);
      await vi.waitFor(() => producerBus.publish(contract, after), { timeout: 15_000 });
      await vi.waitFor(
        () => expect([...after].filter((view) => !handled.has(view.folio))).toEqual([]),
        { timeout: 30_000, interval: 100 },
      );
      expect(Date.now() - backAt).toBeLessThan(30_000);
      expect(before.every((view) => handled.has(view.folio))).toBe(true);
    } finally {
      await running.stop();
    }
  }, 60_000);
});
