// A group-less tail of a topic's keys, as a cache that trusts it would be fooled: it reports only
// what was appended after it started, every key of every partition, and never says it has caught
// up to a moment before reporting every key appended before that moment.
import { randomBytes } from "node:crypto";
import type { LeadViewRecorded } from "@th/contracts";
import { leadViewRecorded as sampleView } from "@th/contracts/samples";
import { describe, expect, it, vi } from "vitest";
import { busFixture } from "./testing/fixture.ts";

const kit = busFixture("bus-tail-test");
const view = (tenant: string): LeadViewRecorded => ({ ...sampleView, tenant_id: tenant });

describe("a tail of a topic's keys", () => {
  it("reports the keys appended after it started, of every partition, and none from before", async () => {
    const contract = await kit.isolatedTopic(4);
    await kit.bus.publish(contract, [view("before-1"), view("before-2")]);
    const seen: string[] = [];
    let restarts = 0;
    const tail = kit.bus.tailKeys(
      contract.topic,
      {
        onKeys: (keys) => seen.push(...keys),
        onCaughtUp: () => {},
        onRestart: () => restarts++,
      },
      { maxWaitMs: 100 },
    );
    try {
      await tail.ready;
      const tenants = Array.from({ length: 40 }, (_, index) => `after-${index}`);
      await kit.bus.publish(contract, tenants.map(view));
      await vi.waitFor(() => expect(seen.sort()).toEqual([...tenants].sort()), { timeout: 5_000 });
      expect(restarts).toBe(1);
    } finally {
      await tail.stop();
    }
  });

  it("says it caught up to a moment only after reporting every key appended before it", async () => {
    const contract = await kit.isolatedTopic(3);
    const seen = new Set<string>();
    const lies: string[] = [];
    /** Keys acknowledged by the broker, with when. */
    const acknowledged: { key: string; at: number }[] = [];
    const tail = kit.bus.tailKeys(
      contract.topic,
      {
        onKeys: (keys) => {
          for (const key of keys) {
            seen.add(key);
          }
        },
        onCaughtUp: (at) => {
          for (const { key, at: ackedAt } of acknowledged) {
            if (ackedAt < at && !seen.has(key)) {
              lies.push(key);
            }
          }
        },
        onRestart: () => {},
      },
      { maxWaitMs: 50 },
    );
    try {
      await tail.ready;
      for (let round = 0; round < 30; round++) {
        const key = `k${round}-${randomBytes(3).toString("hex")}`;
        await kit.bus.publish(contract, view(key));
        acknowledged.push({ key, at: Date.now() });
        await new Promise((resolve) => setTimeout(resolve, round % 3 === 0 ? 60 : 5));
      }
      await vi.waitFor(() => expect(seen.size).toBe(30), { timeout: 5_000 });
    } finally {
      await tail.stop();
    }
    expect(lies).toEqual([]);
  });

  it("stops reporting once stopped", async () => {
    const contract = await kit.isolatedTopic(1);
    const seen: string[] = [];
    const tail = kit.bus.tailKeys(
      contract.topic,
      { onKeys: (keys) => seen.push(...keys), onCaughtUp: () => {}, onRestart: () => {} },
      { maxWaitMs: 50 },
    );
    await tail.ready;
    await tail.stop();
    await kit.bus.publish(contract, view("late"));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen).toEqual([]);
  });
});
