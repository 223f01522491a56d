import { contracts } from "@th/contracts";
import { leadViewRecorded as sampleView } from "@th/contracts/samples";
import { afterEach, describe, expect, it, vi } from "vitest";
import { busFixture } from "./testing/fixture.ts";

const kit = busFixture("idle-client-test");

afterEach(() => {
  vi.restoreAllMocks();
});

describe("an idle Kafka client", () => {
  // kafkajs 2.2.4 re-armed a 1 ms timer per broker connection for as long as it lived (about a
  // thousand wake-ups a second in every service, and a TimeoutNegativeWarning on Node 24);
  // patches/kafkajs@2.2.4.patch schedules the pending-request check only when a request waits.
  it("arms no timer while nothing is in flight, and warns of no negative timeout", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      await kit.bus.provision([contracts.leadViewRecorded]);
      await kit.bus.publish(contracts.leadViewRecorded, [sampleView, sampleView]);
      const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
      const armed = vi.spyOn(globalThis, "setTimeout");
      await wait(500);
      // The only timer armed in the idle half second is the test's own.
      expect(armed).toHaveBeenCalledTimes(1);
      // Warnings are emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).not.toContain("TimeoutNegativeWarning");
    } finally {
      process.off("warning", onWarning);
    }
  });
});
