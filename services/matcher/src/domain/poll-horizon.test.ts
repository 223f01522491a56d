import { describe, expect, it } from "vitest";
import { PollHorizon } from "./poll-horizon.ts";

describe("how long polls have been held back", () => {
  it("counts from the first sample that saw the oldest running transaction, for as long as it stays", () => {
    const horizon = new PollHorizon();
    expect(horizon.observe({ xmin: "100", xmax: "105" }, 1_000)).toBe(0);
    expect(horizon.observe({ xmin: "100", xmax: "140" }, 31_000)).toBe(30);
    expect(horizon.observe({ xmin: "100", xmax: "900" }, 601_000)).toBe(600);
  });

  it("starts again when the oldest running transaction is another one, and is 0 when none runs", () => {
    const horizon = new PollHorizon();
    horizon.observe({ xmin: "100", xmax: "105" }, 0);
    expect(horizon.observe({ xmin: "100", xmax: "105" }, 60_000)).toBe(60);
    expect(horizon.observe({ xmin: "104", xmax: "120" }, 90_000)).toBe(0);
    expect(horizon.observe({ xmin: "120", xmax: "120" }, 120_000)).toBe(0);
    expect(horizon.observe({ xmin: "125", xmax: "130" }, 150_000)).toBe(0);
    expect(horizon.observe({ xmin: "125", xmax: "131" }, 210_000)).toBe(60);
  });
});
