// Percent-encoding against the edge, tried as an attacker would: every route of the gateway,
// each path character escaped in every way the router decodes, must meet the same guards as the
// plain path or find no route at all (decision 0321). Then the doors that stood open, one by one.
import { generateApiKey } from "@th/api-keys";
import { declaredRoutesOf, percentEscapeAt } from "@th/service-kit/testing";
import { createLogger } from "@th/telemetry";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

let stack: EdgeStack;
let address = 0;

beforeAll(async () => {
  stack = await startEdgeStack({
    logger: createLogger({ service: "encoded-paths-test", level: "silent" }),
    // Room for the walk below: the public window is not what is under test here.
    gatewayEnv: { PUBLIC_RATE_PER_MINUTE: "100000", AUTH_FAILURE_RATE_PER_MINUTE: "100000" },
  });
});
afterAll(() => stack.close());

type Method = "GET" | "POST" | "PATCH" | "DELETE";

/** A fresh client address per call, so no per-IP window of one call shapes the next answer. */
function nextIp(): string {
  address++;
  return `198.51.${(address >> 8) & 255}.${address & 255}`;
}

/** A concrete path for a declared route: each parameter a plain sample value. */
function concretePath(route: string): string {
  return route
    .replace(/:\w+(\((?:[^()\\]|\\.)*\))?/g, (match) => (match === "::" ? match : "p1"))
    .replaceAll("::", ":")
    .replace(/\*$/, "x");
}

async function answer(method: Method, url: string, headers: Record<string, string> = {}) {
  const response = await stack.request(method, url, {
    headers,
    ip: nextIp(),
    ...(method === "GET" || method === "DELETE" ? {} : { body: {} }),
  });
  const code = response.headers["content-type"]?.toString().includes("json")
    ? (response.json() as { error?: string }).error
    : undefined;
  return { status: response.statusCode, code };
}

function gatewayRoutes(): { method: Method; url: string }[] {
  const http = stack.gateway.http;
  if (!http) {
    throw new Error("no gateway app");
  }
  return declaredRoutesOf(http)
    .filter((route) => ["GET", "POST", "PATCH", "DELETE"].includes(route.method))
    .map((route) => ({ method: route.method as Method, url: route.url }));
}

describe("every route of the gateway, spelled with percent-escapes", () => {
  it("meets the same guards as its plain spelling (a key in the query is refused with 401) or finds no route", async () => {
    const key = generateApiKey();
    const routes = gatewayRoutes();
    expect(routes.length).toBeGreaterThan(30);
    for (const route of routes) {
      const path = concretePath(route.url);
      const plain = await answer(route.method, `${path}?probe=${key}`);
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
          fc.boolean(),
          async (positions, lowerHex) => {
            const url = `${percentEscapeAt(path, positions, lowerHex)}?probe=${key}`;
            const escaped = await answer(route.method, url);
            if (escaped.status !== 404) {
              expect(escaped, `${route.method} ${url}`).toEqual(plain);
            }
          },
        ),
        { numRuns: 6 },
      );
    }
  });

  it("meets the same guards as its plain spelling for an anonymous client, or finds no route", async () => {
    for (const route of gatewayRoutes()) {
      const path = concretePath(route.url);
      const plain = await answer(route.method, path);
      await fc.assert(
        fc.asyncProperty(fc.array(fc.nat(), { minLength: 1, maxLength: 4 }), async (positions) => {
          const url = percentEscapeAt(path, positions, false);
          const escaped = await answer(route.method, url);
          if (escaped.status !== 404) {
            expect(escaped.status, `${route.method} ${url}`).toBe(plain.status);
            expect(escaped.code, `${route.method} ${url}`).toBe(plain.code);
          }
        }),
        { numRuns: 4 },
      );
    }
  });
});

describe("the doors percent-encoding opened", () => {
  it("Authentication 2: a key in the query of an escaped health path is refused with 401", async () => {
    const key = generateApiKey();
    for (const url of [`/%761/health?probe=${key}`, `/v1/h%65alth?probe=${key}`]) {
      const response = await stack.request("GET", url, { ip: nextIp() });
      expect(response.statusCode, url).toBe(401);
      expect(response.json().error).toBe("unauthorized");
    }
  });

  it("the public window holds for an escaped public path: the limit header is set and the window fills", async () => {
    const ip = nextIp();
    const limited = await startEdgeStack({
      logger: createLogger({ service: "encoded-paths-test", level: "silent" }),
      gatewayEnv: { PUBLIC_RATE_PER_MINUTE: "3" },
    });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const response = await limited.request("GET", "/%761/health", { ip });
        expect(response.headers["x-ratelimit-limit"]).toBe("3");
        statuses.push(response.statusCode);
      }
      expect(statuses).toEqual([200, 200, 200, 429, 429]);
    } finally {
      await limited.close();
    }
  });

  it("MCP without a key lists no tools, however its path is spelled", async () => {
    const body = { jsonrpc: "2.0", id: 1, method: "tools/list" };
    for (const url of ["/mcp", "/%6Dcp", "/m%63p", "/%6d%63%70"]) {
      const response = await stack.request("POST", url, {
        body,
        ip: nextIp(),
        headers: { accept: "application/json, text/event-stream" },
      });
      expect(response.statusCode, url).toBe(401);
      expect(response.body).not.toContain("get_lead");
    }
  });

  it("a folio never reaches another route: GET /v1/leads/count is a lead that does not exist", async () => {
    const tenant = await stack.startTrial("team");
    const response = await stack.request("GET", "/v1/leads/count", { key: tenant.key });
    expect(response.statusCode).toBe(404);
    expect(response.json().error).toBe("not_found");
    expect(response.body).not.toMatch(/"count":\d/);
  });
});
