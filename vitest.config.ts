import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "packages/*/src/**/*.test.ts",
      "packages/*/src/**/*.test.tsx",
      "services/*/src/**/*.test.ts",
      "test/**/*.test.ts",
    ],
    // The longer fault tests (test/chaos-*.test.ts: processes killed and whole stacks restarted)
    // run only under `npm run chaos`, with vitest.chaos.config.ts; the short outage tests run here.
    exclude: ["**/node_modules/**", "test/chaos-*.test.ts"],
    pool: "forks",
    // Two files at a time. Vitest's default is one less than the cores, so a single worker on a
    // two-core machine, where the suite spends most of its time waiting on stores, brokers and
    // child processes rather than on the CPU. Every test's stores, ports and topics are its own.
    maxWorkers: 2,
    // Which stores the suites use (this machine's or containers) is decided once, first.
    globalSetup: [
      "packages/test-stores/src/global-setup.ts",
      "packages/dashboard/src/vitest-setup.ts",
    ],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: ["default"],
  },
});
