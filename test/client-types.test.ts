// The client's committed types are what openapi-typescript makes of the document the gateway
// serves now: a route, field or status added, renamed or removed without regenerating fails here.
import { readFileSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLIENT_TYPES_FILE, renderClientTypes } from "./support/client-types.ts";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

let stack: EdgeStack;

beforeAll(async () => {
  stack = await startEdgeStack();
});
afterAll(() => stack.close());

describe("packages/client generated types", () => {
  it("match the OpenAPI document the gateway serves at /v1/openapi.json", async () => {
    const response = await stack.request("GET", "/v1/openapi.json");
    expect(response.statusCode).toBe(200);
    const rendered = await renderClientTypes(response.json());
    if (process.env.CLIENT_TYPES_UPDATE === "1") {
      writeFileSync(CLIENT_TYPES_FILE, rendered);
    }
    const committed = readFileSync(CLIENT_TYPES_FILE, "utf8");
    expect(
      committed === rendered,
      "packages/client/src/generated/openapi.ts is stale: run CLIENT_TYPES_UPDATE=1 npm test -- test/client-types.test.ts",
    ).toBe(true);
  });
});
