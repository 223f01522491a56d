import { describe, expect, it } from "vitest";
import { patternOf, RouteMethods } from "./route-methods.ts";

describe("route patterns", () => {
  it("match a concrete path as the router does: parameters, literal colons, wildcards, a trailing slash", () => {
    expect(patternOf("/v1/leads/:folio").test("/v1/leads/23-0101")).toBe(true);
    expect(patternOf("/v1/leads/:folio").test("/v1/leads/23-0101/")).toBe(true);
    expect(patternOf("/v1/leads/:folio").test("/v1/leads/a/b")).toBe(false);
    const rotate = patternOf("/v1/watchlists/:id/webhooks/:endpoint_id([^:/]+)::rotate");
    expect(rotate.test("/v1/watchlists/wl_1/webhooks/we_2:rotate")).toBe(true);
    expect(rotate.test("/v1/watchlists/wl_1/webhooks/we_2")).toBe(false);
    expect(patternOf("/assets/*").test("/assets/app.js")).toBe(true);
    expect(patternOf("/v1/usage").test("/v1/usage.json")).toBe(false);
  });

  it("list the methods a path answers", () => {
    const methods = new RouteMethods();
    methods.add(["GET", "HEAD"], "/v1/leads/:folio");
    methods.add("POST", "/v1/leads/batch");
    // HEAD is Fastify's own addition to every GET, refused where a read costs lead-views.
    expect(methods.allowed("/v1/leads/23-1")).toEqual(["GET"]);
    // The batch path is also a folio-shaped path for GET.
    expect(methods.allowed("/v1/leads/batch")).toEqual(["GET", "POST"]);
    expect(methods.allowed("/v1/nothing")).toEqual([]);
  });
});
