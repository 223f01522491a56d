// Dispatcher instances claim their own share of the waiting tenants (decision 0180): the shares
// change nothing a receiver can see. Every webhook id arrives, no tenant's cap is exceeded, and
// the share of an instance killed mid-run is taken over by the one left.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  startReceiver,
  startWebhookStack,
  type WebhookStack,
  waitFor,
} from "./support/webhook-stack.ts";

let stack: WebhookStack;

beforeAll(async () => {
  stack = await startWebhookStack();
});

afterAll(async () => {
  await stack?.close();
});

describe("tenant shares of dispatcher instances", () => {
  it("deliver every webhook id within the caps, and a killed instance's share is taken over", async () => {
    const tenants = Array.from({ length: 12 }, (_, i) => `tn_share_${i}`);
    const inFlight = new Map<string, number>();
    const peak = new Map<string, number>();
    const receiver = await startReceiver(({ body }) => {
      const tenant = (JSON.parse(body) as { tenant_id: string }).tenant_id;
      const now = (inFlight.get(tenant) ?? 0) + 1;
      inFlight.set(tenant, now);
      peak.set(tenant, Math.max(peak.get(tenant) ?? 0, now));
      setTimeout(() => inFlight.set(tenant, (inFlight.get(tenant) ?? 1) - 1), 20);
      return { status: 200, delayMs: 20 };
    });
    try {
      const api = await stack.startDispatcher();
      for (const tenant of tenants) {
        await stack.publishTenant(tenant, "team", { lead_views_per_month: 100_000 });
        await stack.tenantApplied(tenant);
        await stack.subscribe(tenant, `wl_${tenant}`, receiver.url);
      }
      await stack.stopDispatcher(api);
      const victim = await stack.spawnDispatcher({ LEASE_MS: "3000" });
      const survivor = await stack.spawnDispatcher({ LEASE_MS: "3000" });
      const members = () => stack.harness.redis.zcard("th:wh:members");
      await waitFor(async () => (await members()) === 2, { what: "two members" });

      const matches = tenants.flatMap((tenant) =>
        Array.from({ length: 50 }, () => stack.match(tenant, `wl_${tenant}`)),
      );
      await stack.publishMatches(matches);
      const unique = () => new Set(receiver.received.map((r) => r.webhookId));
      await waitFor(() => unique().size >= 100, { timeoutMs: 30_000, what: "a first hundred" });
      victim.kill("SIGKILL");
      // Its beat stops; the survivor's view drops it within the slot lease (3 s).
      await waitFor(async () => (await members()) === 1, { timeoutMs: 10_000, what: "one member" });

      await waitFor(() => unique().size >= matches.length, {
        timeoutMs: 60_000,
        what: `all ${matches.length} webhook ids`,
      });
      const { rows } = await stack.pool.query<{ id: string }>(
        "SELECT id FROM dispatcher.deliveries WHERE tenant_id = ANY($1::text[])",
        [tenants],
      );
      expect(rows).toHaveLength(matches.length);
      const ids = unique();
      expect(rows.every((row) => ids.has(row.id))).toBe(true);
      for (const tenant of tenants) {
        expect(peak.get(tenant)).toBeLessThanOrEqual(10);
      }
      survivor.kill("SIGTERM");
    } finally {
      await receiver.close();
    }
  }, 120_000);
});
