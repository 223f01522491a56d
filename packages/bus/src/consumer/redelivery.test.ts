import { createLogger } from "@th/telemetry";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Attempts } from "./attempts.ts";
import { Redelivery, type Rewindable } from "./redelivery.ts";

const logger = createLogger({ service: "bus-redelivery-test", level: "silent" });

function fakeConsumer() {
  const calls: string[] = [];
  const consumer: Rewindable = {
    pause: (topics) => calls.push(`pause ${JSON.stringify(topics)}`),
    seek: ({ topic, partition, offset }) => calls.push(`seek ${topic}/${partition}@${offset}`),
    resume: (topics) => calls.push(`resume ${JSON.stringify(topics)}`),
  };
  return { consumer, calls };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("Redelivery", () => {
  it("pauses and rewinds the partition at once and resumes it after the wait", () => {
    const { consumer, calls } = fakeConsumer();
    new Redelivery(consumer, new Attempts(), logger).after("t", 3, "42", 1000);
    expect(calls).toEqual(['pause [{"topic":"t","partitions":[3]}]', "seek t/3@42"]);
    vi.advanceTimersByTime(999);
    expect(calls).toHaveLength(2);
    vi.advanceTimersByTime(1);
    expect(calls[2]).toBe('resume [{"topic":"t","partitions":[3]}]');
  });

  it("backs off longer with each outage try, at most 5 s apart", () => {
    const { consumer, calls } = fakeConsumer();
    const redelivery = new Redelivery(consumer, new Attempts(), logger);
    const waitOf = () => {
      const before = calls.length;
      redelivery.afterOutage("t", 0, "1", "t/0/1", new Error("down"));
      let waited = 0;
      while (calls.length < before + 3) {
        vi.advanceTimersByTime(100);
        waited += 100;
      }
      return waited;
    };
    expect([waitOf(), waitOf(), waitOf()]).toEqual([200, 400, 800]);
    for (let tries = 4; tries < 10; tries++) {
      waitOf();
    }
    expect(waitOf()).toBe(5000);
  });

  it("resumes nothing once cancelled", () => {
    const { consumer, calls } = fakeConsumer();
    const redelivery = new Redelivery(consumer, new Attempts(), logger);
    redelivery.after("t", 0, "1", 100);
    redelivery.cancel();
    vi.advanceTimersByTime(1000);
    expect(calls.some((call) => call.startsWith("resume"))).toBe(false);
  });
});
