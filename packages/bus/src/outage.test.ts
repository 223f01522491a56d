// A consumer through a store outage: records whose handler meets an unreachable store are retried
// for as long as it lasts and never parked for it.
import { randomBytes } from "node:crypto";
import type { LeadViewRecorded } from "@th/contracts";
import { leadViewRecorded as sampleView } from "@th/contracts/samples";
import { createLogger } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Bus, type Delivered, on, onBatch } from "./bus.ts";
import { busFixture, TEST_TIMINGS } from "./testing/fixture.ts";

const kit = busFixture("bus-outage-test");
class StoreDown extends Error {
  readonly code = "57P01";
}
let bus: Bus;

beforeAll(() => {
  bus = new Bus({
    brokers: kit.brokers,
    clientId: "bus-outage-test",
    logger: createLogger({ service: "bus-outage-test", level: "silent" }),
    consumerTimings: TEST_TIMINGS,
    isUnavailable: (error) => error instanceof StoreDown,
  });
});
afterAll(() => bus?.close());

const group = () => `group-${randomBytes(4).toString("hex")}`;

describe("a handler whose store is unreachable", () => {
  it("is retried past maxAttempts without parking the record, which is handled once the store is back", async () => {
    const contract = await kit.isolatedTopic();
    let calls = 0;
    const handled: Delivered<LeadViewRecorded>[] = [];
    kit.track(
      await bus.consume({
        group: group(),
        maxAttempts: 2,
        subscriptions: [
          on(contract, async (message) => {
            calls++;
            if (calls <= 4) {
              throw new StoreDown("terminating connection due to administrator command");
            }
            handled.push(message);
            return undefined;
          }),
        ],
      }),
    );
    await bus.publish(contract, [{ ...sampleView, folio: "outage-1" }]);
    await vi.waitFor(() => expect(handled).toHaveLength(1), { timeout: 20_000 });
    expect(calls).toBe(5);
    // The outage's tries are not the record's attempts.
    expect(handled[0]?.attempt).toBe(1);
    const parked = await kit.parkedRecords(contract.topic, 0);
    expect(parked).toHaveLength(0);
  }, 30_000);

  it("retries a whole batch the same way", async () => {
    const contract = await kit.isolatedTopic();
    let calls = 0;
    const handled: string[] = [];
    kit.track(
      await bus.consume({
        group: group(),
        maxAttempts: 2,
        subscriptions: [
          onBatch(contract, async (records) => {
            calls++;
            if (calls <= 4) {
              throw new StoreDown("the database system is shutting down");
            }
            handled.push(...records.map((record) => record.value.folio));
            return undefined;
          }),
        ],
      }),
    );
    await bus.publish(contract, [
      { ...sampleView, folio: "batch-1" },
      { ...sampleView, folio: "batch-2" },
    ]);
    await vi.waitFor(() => expect(handled.sort()).toEqual(["batch-1", "batch-2"]), {
      timeout: 20_000,
    });
    expect(await kit.parkedRecords(contract.topic, 0)).toHaveLength(0);
  }, 30_000);
});
