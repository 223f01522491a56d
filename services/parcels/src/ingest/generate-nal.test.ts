import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { capturedConsole } from "../testing/console.ts";
import { main } from "./generate-nal.ts";

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
