// The ingest command's process is string work row after row. A module that subclasses String
// (ioredis does, and the index of @th/service-kit loads it) turns off V8's fast paths for every
// string built-in of the process: the roll parse took twice the CPU. V8 reports such a loss when
// asked to trace its protectors; the command's modules must cause none of it.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);

describe("the ingest command's modules", () => {
  it("leave the string built-ins their fast paths (no String subclass loaded)", async () => {
    const { stdout, stderr } = await run(
      process.execPath,
      ["--trace-protector-invalidation", join(import.meta.dirname, "cli.ts"), "--help"],
      { env: { PATH: "" } },
    );
    const output = `${stdout}${stderr}`;
    // The command ran (it printed its usage), with V8's protector tracing on.
    expect(output).toMatch(/usage: npm run ingest/);
    expect(output).not.toMatch(/Invalidating protector cell StringWrapperToPrimitive/);
  });
});
