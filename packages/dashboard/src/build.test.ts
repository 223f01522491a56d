import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ensureDashboardBuilt, isBuilt } from "./build.ts";

const scratch = mkdtempSync(join(tmpdir(), "dashboard-build-"));
// biome-ignore lint/style/noProcessEnv: the test is about the build's effect on the environment
const environment = process.env;
const initialNodeEnv = environment.NODE_ENV;

afterEach(() => {
  if (initialNodeEnv === undefined) {
    delete environment.NODE_ENV;
  } else {
    environment.NODE_ENV = initialNodeEnv;
  }
});

describe("the dashboard build", () => {
  // `npm start` builds the dashboard in its own process on a first run and then starts every
  // service with that process's environment: a NODE_ENV left behind by the build would start
  // them in production mode, where the development secrets are refused.
  it("leaves the process's NODE_ENV as it found it, unset included", async () => {
    delete environment.NODE_ENV;
    const dir = join(scratch, "dist");
    try {
      const result = await ensureDashboardBuilt({ force: true, dir });
      expect(result.built).toBe(true);
      expect(existsSync(join(dir, "index.html"))).toBe(true);
      expect(isBuilt(dir)).toBe(true);
      expect("NODE_ENV" in environment).toBe(false);

      environment.NODE_ENV = "development";
      await ensureDashboardBuilt({ force: true, dir });
      expect(environment.NODE_ENV).toBe("development");
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 60_000);
});
