import { inYoungGeneration } from "@th/db/testing";
import { Command, Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";

// V8 allocates a function literal that is assigned straight to a property (`this.reject = () =>`)
// in the old generation. ioredis created each command's reject function that way, and that
// function, dead once the command settled, kept the command, its promise and its reply alive
// through two young collections: every command the edge sent was promoted. The patch in
// patches/ioredis@6.0.0.patch names the function first; these tests fail if it is lost. (The
// probe is shown to tell old from young in packages/db/src/query-allocation.test.ts.)

describe("ioredis command allocation", () => {
  const redis = new Redis({ lazyConnect: true });
  afterAll(() => redis.disconnect());

  it("allocates a command's reject function young, so a settled command is not promoted", () => {
    const command = new Command("get", ["th:key:absent"]);
    expect(inYoungGeneration(command)).toBe(true);
    expect(inYoungGeneration(command.reject)).toBe(true);
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
    const command = new script.Command("evalsha", ["0", 0]);
    command.toWritable({} as never);
    expect(inYoungGeneration(command.reject)).toBe(true);
  });
});
