// What `npm pack` ships: the build of tsconfig.build.json (ES modules and declarations), which
// the published exports point at, loads in plain Node with no TypeScript support, and the
// manifest declares no runtime dependency beyond openapi-fetch.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const pkg = join(import.meta.dirname, "..");
const manifest = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));
const out = mkdtempSync(join(pkg, "dist.tmp-"));

afterAll(() => rmSync(out, { recursive: true, force: true }));

describe("@th/client as published", () => {
  it("declares only openapi-fetch at run time, the repository's licence, and ships its build", () => {
    expect(Object.keys(manifest.dependencies)).toEqual(["openapi-fetch"]);
    const webhooks = JSON.parse(readFileSync(join(pkg, "..", "webhooks", "package.json"), "utf8"));
    expect(manifest.license).toBe(webhooks.license);
    expect(manifest.private).toBeUndefined();
    expect(manifest.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(manifest.files).toContain("dist");
    expect(manifest.publishConfig.exports["."]).toEqual({
      types: "./dist/index.d.ts",
      default: "./dist/index.js",
    });
  });

  it("builds to JavaScript and declarations that plain Node loads", async () => {
    const tsc = join(pkg, "..", "..", "node_modules", ".bin", "tsc");
    await run(tsc, ["-p", join(pkg, "tsconfig.build.json"), "--outDir", out]);
    const { types, default: entry } = manifest.publishConfig.exports["."] as {
      types: string;
      default: string;
    };
    for (const file of [types, entry]) {
      expect(existsSync(join(out, file.replace("./dist/", ""))), file).toBe(true);
    }
    // No type stripping: what a consumer without a TypeScript loader runs.
    const { stdout } = await run(
      process.execPath,
      [
        "--no-experimental-strip-types",
        "--input-type=module",
        "-e",
        `const m = await import(${JSON.stringify(join(out, "index.js"))});
         const c = m.createClient({ apiKey: "th_live_x", baseUrl: "http://127.0.0.1:1" });
         console.log(Object.keys(m).sort().join(","), typeof c.leads.list, typeof c.api.GET);`,
      ],
      { cwd: pkg },
    );
    expect(stdout.trim()).toBe(
      "Pages,QuotaExceededError,RateLimitedError,TerminalHouseError,TierRequiredError,createClient,parseLimits function function",
    );
    // A type check of the whole package: slow on a loaded machine.
  }, 120_000);
});
