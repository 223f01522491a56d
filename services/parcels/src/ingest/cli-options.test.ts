import { describe, expect, it } from "vitest";
import { readIngestOptions, rollsOf, salesFirst, sideBySideRolls } from "./cli.ts";

describe("the ingest command line", () => {
  it("reads stage, workers and rejects, with one worker per core by default", () => {
    expect(readIngestOptions(["--stage", "p", "--no-rejects", "NAL23P202501.csv"], 4)).toEqual({
      options: { paths: ["NAL23P202501.csv"], stage: "preliminary", workers: 4, rejects: false },
    });
    expect(readIngestOptions(["--workers", "1", "a.csv"], 4)).toEqual({
      options: { paths: ["a.csv"], stage: undefined, workers: 1, rejects: true },
    });
  });

  it("answers --help on stdout with exit 0 and mistakes with exit 2 and the usage", () => {
    expect(readIngestOptions(["--help"], 2)).toMatchObject({ exit: 0, toStdout: true });
    const none = readIngestOptions([], 2);
    expect(none).toMatchObject({ exit: 2 });
    expect(readIngestOptions(["--workers", "0", "a.csv"], 2)).toMatchObject({
      exit: 2,
      lines: [
        expect.stringContaining("--workers takes a whole number of at least 1, not 0"),
        expect.stringContaining("usage"),
      ],
    });
    expect(readIngestOptions(["--bogus", "a.csv"], 2)).toMatchObject({ exit: 2 });
  });
});

describe("the order and lanes of an ingest run", () => {
  const files = ["/in/NAL23F202501.csv", "/in/SDF23F202501.csv", "/in/NAL11F202501.csv"];

  it("loads sales files first so the rolls of the same run see their sales", () => {
    expect(salesFirst(files)).toEqual([
      "/in/SDF23F202501.csv",
      "/in/NAL23F202501.csv",
      "/in/NAL11F202501.csv",
    ]);
    expect(rollsOf(files)).toEqual(["/in/NAL23F202501.csv", "/in/NAL11F202501.csv"]);
  });

  it("loads rolls side by side only in a first load, with workers and several counties", () => {
    const rolls = rollsOf(files);
    expect(sideBySideRolls(rolls, true, 2)).toEqual(rolls);
    expect(sideBySideRolls(rolls, false, 2)).toEqual([]);
    expect(sideBySideRolls(rolls, true, 1)).toEqual([]);
    expect(sideBySideRolls(["/in/NAL23F202501.csv", "/in/NAL23F202502.csv"], true, 2)).toEqual([]);
  });
});
