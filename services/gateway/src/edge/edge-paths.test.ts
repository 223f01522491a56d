import { generateApiKey } from "@th/api-keys";
import type { FastifyRequest } from "fastify";
import { describe, expect, it } from "vitest";
import { hasBody, isEdgePath, passesEdge, urlHoldsKey } from "./edge-paths.ts";

function request(fields: {
  url?: string;
  route?: string;
  is404?: boolean;
  headers?: Record<string, string>;
}): FastifyRequest {
  const { route, ...rest } = fields;
  return {
    url: "/",
    is404: false,
    headers: {},
    routeOptions: { url: route },
    ...rest,
  } as unknown as FastifyRequest;
}

describe("the paths behind the edge", () => {
  it("are /v1, its paths and the MCP endpoint, and nothing that merely starts like them", () => {
    for (const url of ["/v1", "/v1/me", "/v1/public/contact", "/mcp", "/mcp?session=1"]) {
      expect(isEdgePath(url), url).toBe(true);
    }
    for (const url of ["/", "/health", "/v1me", "/v2/leads", "/mcpx", "/dashboard/"]) {
      expect(isEdgePath(url), url).toBe(false);
    }
  });

  it("take in a request for no route when it carries a Bearer credential, and not otherwise", () => {
    const bearer = { authorization: "bearer something" };
    expect(passesEdge(request({ url: "/v2/leads", is404: true, headers: bearer }))).toBe(true);
    expect(passesEdge(request({ url: "/v2/leads", is404: true }))).toBe(false);
    expect(passesEdge(request({ url: "/health", is404: false, headers: bearer }))).toBe(false);
  });

  it("are judged by the route that matched, not by the URL as it was sent", () => {
    expect(passesEdge(request({ url: "/%761/health?probe=x", route: "/v1/health" }))).toBe(true);
    expect(passesEdge(request({ url: "/%6Dcp", route: "/mcp" }))).toBe(true);
    expect(passesEdge(request({ url: "/v1/../dashboard", route: "/dashboard/*" }))).toBe(false);
  });
});

describe("Authentication 2: a key in the URL", () => {
  it("is found as is and percent-encoded", () => {
    const key = generateApiKey();
    expect(urlHoldsKey(`/v1/leads?key=${key}`)).toBe(true);
    expect(urlHoldsKey(`/v1/leads?key=${encodeURIComponent(key).replace("_", "%5F")}`)).toBe(true);
  });

  it("is found beside a malformed percent-escape, and a URL without one passes", () => {
    expect(urlHoldsKey(`/v1/leads?a=%E0%A4%A&key=${generateApiKey()}`)).toBe(true);
    expect(urlHoldsKey("/v1/leads?a=%E0%A4%A")).toBe(false);
    expect(urlHoldsKey("/v1/leads?county=Miami-Dade")).toBe(false);
  });
});

describe("a request's body", () => {
  it("is announced by a non-zero length or a chunked transfer", () => {
    expect(hasBody(request({ headers: { "content-length": "12" } }))).toBe(true);
    expect(hasBody(request({ headers: { "transfer-encoding": "chunked" } }))).toBe(true);
    expect(hasBody(request({ headers: { "content-length": "0" } }))).toBe(false);
    expect(hasBody(request({}))).toBe(false);
  });
});
