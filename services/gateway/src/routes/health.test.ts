import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../app.ts";
import { type Config, readConfig } from "../config.ts";

let harness: TestHarness<Config>;
let app: Awaited<ReturnType<typeof buildApp>>;

beforeAll(async () => {
  harness = await createTestHarness({ config: readConfig({}), migrations: [] });
  app = await buildApp(harness);
});
afterAll(async () => {
  await app.http?.close();
  await harness.close();
});

describe("GET /v1/health", () => {
  it("answers 200 without a key", async () => {
    const response = await app.http?.inject({ method: "GET", url: "/v1/health" });
    expect(response?.statusCode).toBe(200);
    expect(response?.json()).toMatchObject({ status: "ok", service: "terminal-house" });
  });

  it("ignores an Authorization header, even a malformed one", async () => {
    for (const authorization of ["Bearer not-a-key", "Basic Zm9vOmJhcg==", "th_live_garbage"]) {
      const response = await app.http?.inject({
        method: "GET",
        url: "/v1/health",
        headers: { authorization },
      });
      expect(response?.statusCode).toBe(200);
    }
  });

  it("is part of the published OpenAPI document", async () => {
    const response = await app.http?.inject({ method: "GET", url: "/v1/openapi.json" });
    expect(response?.statusCode).toBe(200);
    expect(Object.keys(response?.json().paths)).toContain("/v1/health");
  });

  it("lists in the document the answers the routes give besides success", async () => {
    const response = await app.http?.inject({ method: "GET", url: "/v1/openapi.json" });
    const paths = response?.json().paths as Record<
      string,
      Record<string, { responses: Record<string, unknown> }>
    >;
    const statuses = (path: string, method: string) =>
      Object.keys(paths[path]?.[method]?.responses ?? {});
    // A public route is still limited per client IP and refuses a key in its URL.
    expect(statuses("/v1/health", "get")).toEqual(expect.arrayContaining(["200", "401", "429"]));
    // Every route that reads a body can refuse it as too large or not JSON.
    expect(statuses("/v1/leads/batch", "post")).toEqual(expect.arrayContaining(["413", "415"]));
    expect(statuses("/mcp", "post")).toEqual(expect.arrayContaining(["200", "400"]));
  });
});
