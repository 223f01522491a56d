// Webhooks at the public edge: the webhooks surface gate (Starter gets 403 with upgrade_url), the
// colon-action paths exactly as the specification writes them, and their OpenAPI entries.
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";
import {
  type Receiver,
  startReceiver,
  startWebhookStack,
  type WebhookStack,
} from "./support/webhook-stack.ts";

let hooks: WebhookStack;
let edge: EdgeStack;
let receiver: Receiver;

beforeAll(async () => {
  hooks = await startWebhookStack();
  const dispatcher = await hooks.startDispatcher();
  if (!dispatcher.http) {
    throw new Error("the dispatcher has no HTTP app");
  }
  await dispatcher.http.listen({ port: 0, host: "127.0.0.1" });
  const port = (dispatcher.http.server.address() as AddressInfo).port;
  edge = await startEdgeStack({ gatewayEnv: { DISPATCHER_URL: `http://127.0.0.1:${port}` } });
  receiver = await startReceiver();
});

afterAll(async () => {
  await receiver?.close();
  await edge?.close();
  await hooks?.close();
});

describe("webhooks through the gateway", () => {
  it("Starter gets 403 tier_required with an upgrade_url", async () => {
    const starter = await edge.startTrial("starter");
    const response = await edge.request("POST", "/v1/watchlists/wl_1/webhooks", {
      key: starter.key,
      body: { url: "https://hooks.example.com/in", events: ["watchlist.match"] },
    });
    expect(response.statusCode).toBe(403);
    const body = response.json();
    expect(body.error).toBe("tier_required");
    expect(body.upgrade_url).toContain("feature=webhooks");
    // Reading the endpoints is part of the surface too.
    for (const url of ["/v1/watchlists/wl_1/webhooks", "/v1/watchlists/wl_1/webhooks/"]) {
      const listed = await edge.request("GET", url, { key: starter.key });
      expect(listed.statusCode, url).toBe(403);
    }
  });

  it("removes a watchlist's endpoints with the watchlist, so nothing queued for them goes out", async () => {
    const operator = await edge.startTrial("operator");
    const watchlist = await edge.request("POST", "/v1/watchlists", {
      key: operator.key,
      body: { name: "to delete", recipe: { filters: { counties: [23] } } },
    });
    expect(watchlist.statusCode).toBe(201);
    const base = `/v1/watchlists/${watchlist.json().id}/webhooks`;
    const endpoint = await edge.request("POST", base, {
      key: operator.key,
      body: { url: receiver.url, events: ["watchlist.match"] },
    });
    expect(endpoint.statusCode).toBe(201);
    const deleted = await edge.request("DELETE", `/v1/watchlists/${watchlist.json().id}`, {
      key: operator.key,
    });
    expect(deleted.statusCode).toBe(204);
    const { rows } = await hooks.pool.query(
      "SELECT deleted_at FROM dispatcher.endpoints WHERE id = $1",
      [endpoint.json().id],
    );
    expect(rows[0]?.deleted_at).toBeInstanceOf(Date);
  });

  it("refuses a subscription with an unknown field, such as a secret of the caller's choosing, naming it", async () => {
    const operator = await edge.startTrial("operator");
    const response = await edge.request("POST", "/v1/watchlists/wl_1/webhooks", {
      key: operator.key,
      body: { url: receiver.url, events: ["watchlist.match"], secret: "whsec_mine" },
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().fields).toEqual([{ path: "body.secret", message: "unknown field" }]);
  });

  it("Operator subscribes, lists, rotates with {endpoint_id}:rotate, replays with {delivery_id}:replay and deliveries:replay", async () => {
    const operator = await edge.startTrial("operator");
    const created = await edge.request("POST", "/v1/watchlists/wl_1/webhooks", {
      key: operator.key,
      body: { url: receiver.url, events: ["watchlist.match"] },
    });
    expect(created.statusCode).toBe(201);
    const endpoint = created.json();
    expect(endpoint.secret).toMatch(/^whsec_/);

    const list = await edge.request("GET", "/v1/watchlists/wl_1/webhooks", { key: operator.key });
    expect(list.statusCode).toBe(200);
    expect(list.json().data.map((e: { id: string }) => e.id)).toEqual([endpoint.id]);
    expect(list.body).not.toContain("whsec_");

    const rotated = await edge.request(
      "POST",
      `/v1/watchlists/wl_1/webhooks/${endpoint.id}:rotate`,
      {
        key: operator.key,
      },
    );
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json().secret).not.toBe(endpoint.secret);

    const unknown = await edge.request(
      "POST",
      `/v1/watchlists/wl_1/webhooks/${endpoint.id}/deliveries/00000000-0000-4000-8000-000000000000:replay`,
      { key: operator.key },
    );
    expect(unknown.statusCode).toBe(404);

    const bulk = await edge.request(
      "POST",
      `/v1/watchlists/wl_1/webhooks/${endpoint.id}/deliveries:replay`,
      {
        key: operator.key,
        body: { since: new Date(Date.now() - 3_600_000).toISOString() },
      },
    );
    expect(bulk.statusCode).toBe(202);
    expect(bulk.json()).toEqual({ replayed: 0, delivery_ids: [] });

    const log = await edge.request(
      "GET",
      `/v1/watchlists/wl_1/webhooks/${endpoint.id}/deliveries?limit=10`,
      {
        key: operator.key,
      },
    );
    expect(log.statusCode).toBe(200);
    expect(log.json()).toEqual({ data: [], next_cursor: null });

    const removed = await edge.request("DELETE", `/v1/watchlists/wl_1/webhooks/${endpoint.id}`, {
      key: operator.key,
    });
    expect(removed.statusCode).toBe(204);
  });

  it("the OpenAPI document shows the colon actions exactly as the specification writes them", async () => {
    const response = await edge.request("GET", "/v1/openapi.json");
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    const paths = Object.keys(response.json().paths);
    expect(paths).toContain("/v1/watchlists/{id}/webhooks/{endpoint_id}:rotate");
    expect(paths).toContain(
      "/v1/watchlists/{id}/webhooks/{endpoint_id}/deliveries/{delivery_id}:replay",
    );
    expect(paths).toContain("/v1/watchlists/{id}/webhooks/{endpoint_id}/deliveries:replay");
    const rotate = response.json().paths["/v1/watchlists/{id}/webhooks/{endpoint_id}:rotate"].post;
    expect(rotate.parameters.map((p: { name: string }) => p.name).sort()).toEqual([
      "endpoint_id",
      "id",
    ]);
  });
});
