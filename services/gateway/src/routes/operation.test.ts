import {
  changePassword,
  getAccount,
  getWebhookEndpoint,
  listApiKeys,
  listDashboardApiKeys,
  listWebhookDeliveries,
  rotateWebhookSecret,
  startTrial,
} from "@th/api-schemas";
import type { FastifyRequest } from "fastify";
import { describe, expect, it } from "vitest";
import { internalUrl, publicRoute } from "./operation.ts";

const request = (url: string, params: Record<string, string>) =>
  ({ url, params }) as unknown as FastifyRequest;

describe("internalUrl", () => {
  it("fills the owner's path with the request's parameters and names the route it means there", () => {
    expect(
      internalUrl(
        getWebhookEndpoint,
        request("/v1/watchlists/wl_1/webhooks/ep_2", { id: "wl_1", endpoint_id: "ep_2" }),
      ),
    ).toEqual({
      path: "/internal/v1/watchlists/wl_1/webhooks/ep_2",
      route: getWebhookEndpoint.internalPath,
    });
  });

  it("keeps a colon action literal and drops the parameter's pattern", () => {
    expect(
      internalUrl(
        rotateWebhookSecret,
        request("/v1/watchlists/wl_1/webhooks/ep_2:rotate", { id: "wl_1", endpoint_id: "ep_2" }),
      ),
    ).toMatchObject({ path: "/internal/v1/watchlists/wl_1/webhooks/ep_2:rotate" });
  });

  it("encodes a parameter and passes the query string as the caller wrote it", () => {
    expect(
      internalUrl(
        listWebhookDeliveries,
        request("/v1/watchlists/a%20b/webhooks/ep/deliveries?state=parked&limit=5", {
          id: "a b",
          endpoint_id: "ep",
        }),
      ),
    ).toMatchObject({
      path: "/internal/v1/watchlists/a%20b/webhooks/ep/deliveries?state=parked&limit=5",
    });
  });
});

describe("publicRoute", () => {
  it("gates an operation by its surface and documents the key it takes", () => {
    const route = publicRoute(getWebhookEndpoint);
    expect(route.config).toEqual({ edge: { surface: "webhooks" } });
    expect(route.schema.security).toEqual([{ bearerAuth: [] }]);
    expect(Object.keys(route.schema.response)).toEqual(
      expect.arrayContaining(["200", "400", "401", "403", "404", "429", "500", "503"]),
    );
  });

  it("leaves an operation open on every tier ungated", () => {
    expect(publicRoute(getAccount)).not.toHaveProperty("config");
  });

  it("opens a public operation at the edge and documents no key", () => {
    const route = publicRoute(startTrial);
    expect(route.config).toEqual({ edge: { public: true } });
    expect(route.schema).not.toHaveProperty("security");
  });

  it("documents no key for a dashboard operation, which the edge authenticates as a session only", () => {
    const route = publicRoute(changePassword);
    expect(route.config).toEqual({ edge: { sessionOnly: true } });
    expect(route.schema).not.toHaveProperty("security");
    expect(publicRoute(listDashboardApiKeys).config).toEqual({ edge: { sessionOnly: true } });
    expect(publicRoute(listApiKeys).config).toEqual({ edge: { surface: "management" } });
  });
});
