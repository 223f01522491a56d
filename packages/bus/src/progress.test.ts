import { randomBytes } from "node:crypto";
import type { LeadViewRecorded } from "@th/contracts";
import { leadViewRecorded as sampleView } from "@th/contracts/samples";
import { Kafka, logLevel } from "kafkajs";
import { describe, expect, it } from "vitest";
import { on } from "./bus.ts";
import { busFixture } from "./testing/fixture.ts";

const kit = busFixture("bus-progress-test");

function view(tenant: string, folio: string): LeadViewRecorded {
  return { ...sampleView, tenant_id: tenant, folio };
}

describe("bus progress and replay", () => {
  it("names the partition the producer picks for a key", async () => {
    const contract = await kit.isolatedTopic(5);
    const tenants = Array.from({ length: 12 }, (_, index) => `tenant-${index}`);
    await kit.bus.publish(
      contract,
      tenants.map((tenant) => view(tenant, "f1")),
    );
    const raw = new Kafka({ brokers: kit.brokers, logLevel: logLevel.NOTHING });
    const consumer = raw.consumer({ groupId: `raw-${randomBytes(4).toString("hex")}` });
    await consumer.connect();
    await consumer.subscribe({ topics: [contract.topic], fromBeginning: true });
    const seen = new Map<string, number>();
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ partition, message }) => {
          seen.set(String(message.key), partition);
          if (seen.size === tenants.length) {
            resolve();
          }
        },
      });
    });
    await consumer.disconnect();
    for (const tenant of tenants) {
      expect(await kit.bus.partitionFor(contract.topic, tenant)).toBe(seen.get(tenant));
    }
  });

  it("reports high-water marks and waits until a group has processed up to them", async () => {
    const contract = await kit.isolatedTopic(3);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const handled: string[] = [];
    const consumer = await kit.bus.consume({
      group: `progress-${randomBytes(4).toString("hex")}`,
      subscriptions: [
        on(contract, async ({ value }) => {
          await gate;
          handled.push(value.folio);
          return undefined;
        }),
      ],
    });
    kit.track(consumer);
    await kit.bus.publish(contract, [view("t-wait", "a"), view("t-wait", "b")]);
    const partition = await kit.bus.partitionFor(contract.topic, "t-wait");
    const high = (await kit.bus.highWaterMarks(contract.topic)).get(partition);
    expect(high).toBe("2");

    expect(
      await consumer.waitUntilProcessed(contract.topic, partition, "2", { timeoutMs: 300 }),
    ).toBe(false);
    release();
    expect(
      await consumer.waitUntilProcessed(contract.topic, partition, "2", { timeoutMs: 5000 }),
    ).toBe(true);
    expect(handled).toEqual(["a", "b"]);
    // An empty partition is processed up to its high-water mark of 0 at once.
    expect(await consumer.waitUntilProcessed(contract.topic, (partition + 1) % 3, "0")).toBe(true);
  });

  it("sees progress made by another member of the group through its committed offsets", async () => {
    const contract = await kit.isolatedTopic(1);
    const group = `progress-${randomBytes(4).toString("hex")}`;
    const first = await kit.bus.consume({
      group,
      subscriptions: [on(contract, async () => undefined)],
    });
    await kit.bus.publish(contract, [
      view("t-other", "a"),
      view("t-other", "b"),
      view("t-other", "c"),
    ]);
    expect(await first.waitUntilProcessed(contract.topic, 0, "3", { timeoutMs: 5000 })).toBe(true);
    await first.stop();
    expect((await kit.bus.committedOffsets(group, contract.topic)).get(0)).toBe("3");
    // A new member that has handled nothing itself still knows the group got there.
    const second = await kit.bus.consume({
      group,
      subscriptions: [on(contract, async () => undefined)],
    });
    kit.track(second);
    expect(await second.waitUntilProcessed(contract.topic, 0, "3", { timeoutMs: 5000 })).toBe(true);
  });

  it("replays a topic from its start up to the high-water marks taken when it began", async () => {
    const contract = await kit.isolatedTopic(4);
    const published = Array.from({ length: 500 }, (_, index) =>
      view(`t-${index % 7}`, `folio-${index}`),
    );
    await kit.bus.publish(contract, published);
    const replayed: string[] = [];
    const result = await kit.bus.replay(contract, {
      onBatch: async (records) => {
        for (const record of records) {
          replayed.push(record.value.folio);
        }
      },
    });
    expect(result.records).toBe(500);
    expect(replayed.sort()).toEqual(published.map((value) => value.folio).sort());
    expect([...result.highWaterMarks.values()].reduce((sum, high) => sum + Number(high), 0)).toBe(
      500,
    );
    // An empty topic replays nothing and returns at once.
    const empty = await kit.isolatedTopic(2);
    expect((await kit.bus.replay(empty, { onBatch: async () => {} })).records).toBe(0);
  });

  it("fails the replay when a batch cannot be applied", async () => {
    const contract = await kit.isolatedTopic(2);
    await kit.bus.publish(contract, [view("t-fail", "a")]);
    await expect(
      kit.bus.replay(contract, {
        onBatch: async () => {
          throw new Error("shadow ledger unavailable");
        },
      }),
    ).rejects.toThrow("shadow ledger unavailable");
  });
});
