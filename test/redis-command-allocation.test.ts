import { inYoungGeneration } from "@th/db/testing";
import { Command, Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";

// The gateway's edge sends every Redis command through ioredis; this probe of V8's heap lives here,
// with the other tests that need the database package's testing tools, because the gateway
// declares no database (decision 0241).
//
// V8 allocates a function literal that is assigned straight to a property (`this.reject = () =>`)
// in the old generation. ioredis created each command's reject function that way, and that
// function, dead once the command settled, kept the command, its promise and its reply alive
// through two young collections: every command the edge sent was promoted. The patch in
// patches/ioredis@6.0.0.patch names the function first; these tests fail if it is lost. (The
// probe is shown to tell old from young in packages/db/src/query-allocation.test.ts.)

describe("ioredis command allocation", () => {
  const redis = new Redis({ lazyConnect: true });
  afterAll(() => redis.disconnect());

  // Judged over many commands: a young collection or V8's allocation-site feedback may place the
  // odd one elsewhere on a loaded machine, while a pretenured function literal is never young.
  const SAMPLES = 50;
  const youngShare = (make: () => unknown) =>
    Array.from({ length: SAMPLES }, make).filter(inYoungGeneration).length / SAMPLES;

  it("allocates a command's reject function young, so a settled command is not promoted", () => {
    expect(youngShare(() => new Command("get", ["th:key:absent"]))).toBeGreaterThanOrEqual(0.8);
    expect(youngShare(() => new Command("get", ["th:key:absent"]).reject)).toBeGreaterThanOrEqual(
      0.8,
    );
  });

  it("allocates a script command's reject function young when it is written", () => {
    redis.defineCommand("thAllocationProbe", { numberOfKeys: 0, lua: "return 1" });
    const scripts = (
      redis as unknown as { scriptsSet: Record<string, { Command: typeof Command }> }
    ).scriptsSet;
    const script = scripts.thAllocationProbe;
    if (!script) {
      throw new Error("the script was not defined");
    }
    const rejectOfWritten = () => {
      const command = new script.Command("evalsha", ["0", 0]);
      command.toWritable({} as never);
      return command.reject;
    };
    expect(youngShare(rejectOfWritten)).toBeGreaterThanOrEqual(0.8);
  });
});
