import { describe, expect, it } from "vitest";
import { seededRandom } from "./seeded-random.ts";

describe("the seeded random numbers", () => {
  it("are mulberry32's sequence, so a seed replays the same fixtures everywhere", () => {
    const random = seededRandom(1);
    expect([random(), random(), random()]).toEqual([
      0.6270739405881613, 0.002735721180215478, 0.5274470399599522,
    ]);
  });

  it("give the same sequence for the same seed and another for another seed", () => {
    const draws = (seed: number) => {
      const random = seededRandom(seed);
      return Array.from({ length: 5 }, () => random());
    };
    expect(draws(7)).toEqual(draws(7));
    expect(draws(7)).not.toEqual(draws(8));
  });

  it("stay in [0, 1) and spread over it", () => {
    const random = seededRandom(20261129);
    const values = Array.from({ length: 10_000 }, () => random());
    expect(values.every((value) => value >= 0 && value < 1)).toBe(true);
    const tenths = new Set(values.map((value) => Math.floor(value * 10)));
    expect(tenths.size).toBe(10);
    const mean = values.reduce((sum, value) => sum + value, 0) / values.length;
    expect(mean).toBeGreaterThan(0.48);
    expect(mean).toBeLessThan(0.52);
  });
});
