import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { capturedConsole } from "./console.ts";
import { dice, main } from "./generate-nal.ts";

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "generate-nal-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));
afterEach(() => {
  vi.restoreAllMocks();
});

describe("the roll generator's command line", () => {
  it("writes a roll of the county asked for under the DOR file name", async () => {
    const printed = capturedConsole("info");
    expect(await main(["--rows", "3", "--seed", "2", "--county", "13", "--out", dir])).toBe(0);
    const file = join(dir, "NAL13F202501.csv");
    expect(printed).toEqual([`wrote 3 rows to ${file}`]);
    const lines = (await readFile(file, "utf8")).trim().split("\r\n");
    expect(lines).toHaveLength(4);
  });

  it("answers a mistake with one line and the usage, never a stack trace", async () => {
    for (const argv of [["--bogus"], ["--rows", "-1"], ["--rows", "x"], ["--county", "99"]]) {
      const errors = capturedConsole("error");
      expect(await main(argv), argv.join(" ")).toBe(2);
      expect(errors.join("\n"), argv.join(" ")).not.toMatch(/\n\s+at /);
      vi.restoreAllMocks();
    }
    const printed = capturedConsole("info");
    expect(await main(["--help"])).toBe(0);
    expect(printed[0]).toMatch(/^usage: generate-nal.ts/);
  });
});

describe("the roll generator's draws", () => {
  it("give the same sequence for the same seed and another for another seed", () => {
    const draws = (seed: number) => {
      const d = dice(seed);
      return Array.from({ length: 20 }, () => d.between(1, 1_000_000));
    };
    expect(draws(3)).toEqual(draws(3));
    expect(draws(3)).not.toEqual(draws(4));
  });

  it("stay within both bounds of a range, reaching each", () => {
    const d = dice(9);
    const seen = new Set(Array.from({ length: 2_000 }, () => d.between(1, 6)));
    expect([...seen].sort()).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("pick weighted codes in proportion to their weights", () => {
    const d = dice(11);
    const items: [string, number][] = [
      ["a", 3],
      ["b", 1],
    ];
    const picks = Array.from({ length: 8_000 }, () => d.weighted(items, 4));
    const share = picks.filter((code) => code === "a").length / picks.length;
    expect(share).toBeGreaterThan(0.72);
    expect(share).toBeLessThan(0.78);
  });
});
