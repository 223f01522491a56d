import { describe, expect, it } from "vitest";
import { z } from "zod";
import { PUBLIC_OPERATIONS } from "./index.ts";
import { defineOperation, requestSchemas } from "./operation.ts";
import { rotateWebhookSecret } from "./webhooks.ts";

describe("the table of public operations", () => {
  it("names each operation once", () => {
    const ids = PUBLIC_OPERATIONS.map((operation) => operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("declares each method and public path once", () => {
    const publicRoutes = PUBLIC_OPERATIONS.map(({ method, path }) => `${method} ${path}`);
    expect(new Set(publicRoutes).size).toBe(publicRoutes.length);
  });

  it("publishes under /v1 and reaches the owner under /internal", () => {
    for (const operation of PUBLIC_OPERATIONS) {
      expect(operation.path, operation.operationId).toMatch(/^\/v1\//);
      expect(operation.internalPath, operation.operationId).toMatch(/^\/internal\//);
    }
  });
});

describe("what the operations say of themselves", () => {
  it("E9: :rotate says the old secret retires at once, as the rotation does (decision 0132)", () => {
    expect(rotateWebhookSecret.summary).toMatch(/old one retires at once/);
    expect(rotateWebhookSecret.summary).not.toMatch(/24 h|keeps signing/);
  });
});

describe("requestSchemas", () => {
  it("keeps only the request parts an operation declares", () => {
    const params = z.object({ id: z.string() });
    const operation = defineOperation({
      operationId: "getThing",
      method: "GET",
      path: "/v1/things/:id",
      internalPath: "/internal/v1/things/:id",
      owner: "keys",
      tags: ["things"],
      params,
      responses: { 200: z.object({}) },
      errors: [],
    });
    const schemas = requestSchemas(operation);
    expect(Object.keys(schemas)).toEqual(["params"]);
    expect(schemas.params).toBe(params);
  });
});
