import { describe, expect, it } from "vitest";
import { coalescedDrains } from "./coalesced-drains.ts";

/** A drain the test finishes by hand, counting how often it started. */
function manualDrain() {
  const finishers: Array<(n: number) => void> = [];
  return {
    started: () => finishers.length,
    drain: () => new Promise<number>((resolve) => finishers.push(resolve)),
    finish: (index: number, n: number) => finishers[index]?.(n),
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("coalescedDrains", () => {
  it("runs one drain at a time and answers what it drained", async () => {
    const manual = manualDrain();
    const drains = coalescedDrains(manual.drain);
    const first = drains.flush();
    expect(manual.started()).toBe(1);
    expect(drains.running()).toBeDefined();
    manual.finish(0, 3);
    expect(await first).toBe(3);
    await tick();
    expect(drains.running()).toBeUndefined();
  });

  it("gives flushes asked for during a drain one fresh drain after it, shared between them", async () => {
    const manual = manualDrain();
    const drains = coalescedDrains(manual.drain);
    const first = drains.flush();
    const second = drains.flush();
    const third = drains.flush();
    expect(second).toBe(third);
    expect(manual.started()).toBe(1);
    manual.finish(0, 1);
    expect(await first).toBe(1);
    await tick();
    expect(manual.started()).toBe(2);
    manual.finish(1, 4);
    expect(await second).toBe(4);
    expect(await third).toBe(4);
  });

  it("still runs the fresh drain when the running one fails", async () => {
    let calls = 0;
    const drains = coalescedDrains(async () => {
      calls++;
      if (calls === 1) {
        throw new Error("broker away");
      }
      return 2;
    });
    const failing = drains.flush();
    const after = drains.flush();
    await expect(failing).rejects.toThrow("broker away");
    expect(await after).toBe(2);
    expect(calls).toBe(2);
  });
});
