import { unservedOperations } from "@th/api-schemas";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";
import { migrations } from "../db/migrations.ts";

let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;

beforeAll(async () => {
  harness = await createTestHarness({ config: readConfig({}), migrations: [migrations] });
  app = await buildApp(harness, { projection: false });
});
afterAll(async () => {
  await app.http?.close();
  await harness.close();
});

describe("the operation table", () => {
  it("has a route at the internal path of every public operation the matcher service owns", () => {
    const { owned, unserved } = unservedOperations("matcher", (route) =>
      Boolean(app.http?.hasRoute(route)),
    );
    expect(owned).toBeGreaterThan(0);
    expect(unserved).toEqual([]);
  });
});
