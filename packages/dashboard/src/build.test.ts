import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ensureDashboardBuilt, isBuilt } from "./build.ts";

const scratch = mkdtempSync(join(tmpdir(), "dashboard-build-"));
const initialNodeEnv = process.env.NODE_ENV;

afterEach(() => {
  process.env.NODE_ENV = initialNodeEnv;
});

describe("the dashboard build", () => {
  // `npm start` builds the dashboard in its own process on a first run and then starts every
  // service with that process's environment: a NODE_ENV left behind by the build would start
  // them in production mode, where the development secrets are refused.
  it("leaves the process's NODE_ENV as it found it, unset included", async () => {
    delete process.env.NODE_ENV;
    const dir = join(scratch, "dist");
    try {
      const result = await ensureDashboardBuilt({ force: true, dir });
      expect(result.built).toBe(true);
      expect(existsSync(join(dir, "index.html"))).toBe(true);
      expect(isBuilt(dir)).toBe(true);
      expect("NODE_ENV" in process.env).toBe(false);

      process.env.NODE_ENV = "development";
      await ensureDashboardBuilt({ force: true, dir });
      expect(process.env.NODE_ENV).toBe("development");
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 60_000);
});
