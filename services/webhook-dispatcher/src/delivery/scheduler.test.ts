import { createLogger } from "@th/telemetry";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createScheduler, type PollOutcome } from "./scheduler.ts";

const POLL_MS = 100;

/** A scheduler whose polls answer `outcomes` in turn (the last one from then on). */
function scheduled(outcomes: PollOutcome[]) {
  const at: number[] = [];
  const scheduler = createScheduler({
    pollMs: POLL_MS,
    now: () => Date.now(),
    logger: createLogger({ service: "scheduler-test", level: "fatal" }),
    poll: async () => {
      at.push(Date.now());
      return outcomes.length > 1 ? (outcomes.shift() as PollOutcome) : (outcomes[0] ?? "empty");
    },
  });
  const gaps = () => at.slice(1).map((time, i) => time - (at[i] as number));
  return { scheduler, at, gaps };
}

describe("the claim scheduler", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("polls every pollMs while claims find rows or there is no room", async () => {
    const { scheduler, gaps } = scheduled(["some", "busy", "some", "busy", "some"]);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(POLL_MS * 4);
    scheduler.stop();
    expect(gaps()).toEqual([POLL_MS, POLL_MS, POLL_MS, POLL_MS]);
  });

  it("claims again at once after a full claim", async () => {
    const { scheduler, gaps } = scheduled(["full", "full", "some"]);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(POLL_MS * 1.5);
    scheduler.stop();
    // "At once" is the timers' shortest wait, one millisecond.
    expect(gaps()).toEqual([1, 1, POLL_MS]);
  });

  it("doubles the wait after claims that find nothing, up to four times pollMs", async () => {
    const { scheduler, gaps } = scheduled(["empty"]);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(POLL_MS * 20);
    scheduler.stop();
    expect(gaps().slice(0, 5)).toEqual([
      POLL_MS * 2,
      POLL_MS * 4,
      POLL_MS * 4,
      POLL_MS * 4,
      POLL_MS * 4,
    ]);
  });

  it("polls at once when woken while idle, and at pollMs again after that", async () => {
    const { scheduler, at, gaps } = scheduled(["empty", "empty", "empty", "some", "some"]);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(POLL_MS * 6);
    const before = at.length;
    scheduler.wake();
    await vi.advanceTimersByTimeAsync(0);
    expect(at.length).toBe(before + 1);
    await vi.advanceTimersByTimeAsync(POLL_MS);
    scheduler.stop();
    expect(gaps().slice(-2)).toEqual([
      (at[before] as number) - (at[before - 1] as number),
      POLL_MS,
    ]);
  });

  it("a claim that finds rows brings an idle wait back to pollMs", async () => {
    const { scheduler, gaps } = scheduled(["empty", "empty", "some", "empty", "some"]);
    scheduler.start();
    await vi.advanceTimersByTimeAsync(POLL_MS * 12);
    scheduler.stop();
    expect(gaps().slice(0, 4)).toEqual([POLL_MS * 2, POLL_MS * 4, POLL_MS, POLL_MS * 2]);
  });
});
