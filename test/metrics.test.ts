// Service metrics the operations runbooks rely on, read from the registry the internal /metrics
// port serves: HTTP requests by route and status, lead-views recorded by surface, 429s by window.
import { buildApp as buildGateway } from "@th/gateway/app";
import { createMetrics } from "@th/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

let stack: EdgeStack;
let folios: string[];

beforeAll(async () => {
  stack = await startEdgeStack();
  folios = await stack.ingestSample();
});
afterAll(() => stack.close());

describe("gateway metrics", () => {
  it("count lead-views recorded by surface and rate-limit refusals by window", async () => {
    const metrics = createMetrics("gateway");
    const gateway = await buildGateway({ ...stack.harness, config: stack.gatewayConfig, metrics });
    try {
      const tenant = await stack.startTrial("custom");
      await stack.setCustomLimits(tenant.tenantId, { rate_per_minute: 3 });
      await stack.request("POST", "/v1/leads/batch", {
        key: tenant.key,
        body: { folios: folios.slice(0, 2) },
        via: gateway,
      });
      for (let i = 0; i < 3; i++) {
        await stack.request("GET", "/v1/me", { key: tenant.key, via: gateway });
      }
      const text = await metrics.registry.metrics();
      expect(text).toMatch(/th_lead_views_recorded_total\{[^}]*surface="rest"[^}]*\} 2/);
      expect(text).toMatch(/th_rate_limit_rejections_total\{[^}]*scope="tenant"[^}]*\} 1/);
    } finally {
      await gateway.http?.close();
    }
  });
});
