import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "packages/*/src/**/*.test.ts",
      "packages/*/src/**/*.test.tsx",
      "services/*/src/**/*.test.ts",
      "test/**/*.test.ts",
    ],
    exclude: ["**/node_modules/**"],
    pool: "forks",
    globalSetup: ["packages/dashboard/src/vitest-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ["default"],
  },
});
