// `npm run chaos`: the fault suite, the outage tests `npm test` runs too and the longer fault
// tests it leaves out (test/chaos-*.test.ts), with the same stores and setup as the main suite.
import { defineConfig } from "vitest/config";
import base from "./vitest.config.ts";

export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ["test/outage-*.test.ts", "test/chaos-*.test.ts"],
    exclude: ["**/node_modules/**"],
    testTimeout: 300_000,
    hookTimeout: 300_000,
  },
});
