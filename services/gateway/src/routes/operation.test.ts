import { getWebhookEndpoint, listWebhookDeliveries, rotateWebhookSecret } from "@th/api-schemas";
import type { FastifyRequest } from "fastify";
import { describe, expect, it } from "vitest";
import { internalUrl } from "./operation.ts";

const request = (url: string, params: Record<string, string>) =>
  ({ url, params }) as unknown as FastifyRequest;

describe("internalUrl", () => {
  it("fills the owner's path with the request's parameters", () => {
    expect(
      internalUrl(
        getWebhookEndpoint,
        request("/v1/watchlists/wl_1/webhooks/ep_2", { id: "wl_1", endpoint_id: "ep_2" }),
      ),
    ).toBe("/internal/v1/watchlists/wl_1/webhooks/ep_2");
  });

  it("keeps a colon action literal and drops the parameter's pattern", () => {
    expect(
      internalUrl(
        rotateWebhookSecret,
        request("/v1/watchlists/wl_1/webhooks/ep_2:rotate", { id: "wl_1", endpoint_id: "ep_2" }),
      ),
    ).toBe("/internal/v1/watchlists/wl_1/webhooks/ep_2:rotate");
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
    ).toBe("/internal/v1/watchlists/a%20b/webhooks/ep/deliveries?state=parked&limit=5");
  });
});
