// Webhook delivery at scale: per-tenant concurrency held across dispatcher processes, one
// tenant's slow endpoint never delaying another's, lead-view quota (parked, visible, released on
// upgrade; never dropped), and kill -9 of a dispatcher process mid-burst losing nothing.
import { contracts, type LeadViewRecorded } from "@th/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Receiver,
  startReceiver,
  startWebhookStack,
  type WebhookStack,
  waitFor,
} from "./support/webhook-stack.ts";

let stack: WebhookStack;
const receivers: Receiver[] = [];

beforeAll(async () => {
  stack = await startWebhookStack();
});

afterAll(async () => {
  await Promise.allSettled(receivers.map((receiver) => receiver.close()));
  await stack?.close();
});

async function receiverWith(script: Parameters<typeof startReceiver>[0]) {
  const receiver = await startReceiver(script);
  receivers.push(receiver);
  return receiver;
}

async function states(tenantId: string) {
  const { rows } = await stack.pool.query<{ state: string; n: number }>(
    "SELECT state, count(*)::int AS n FROM dispatcher.deliveries WHERE tenant_id = $1 GROUP BY state",
    [tenantId],
  );
  return Object.fromEntries(rows.map((row) => [row.state, row.n]));
}

describe("per-tenant concurrency across two dispatcher processes", () => {
  it("an Operator tenant never has more than 5 deliveries in flight, and a slow tenant never delays another", async () => {
    const a = await stack.spawnDispatcher();
    const b = await stack.spawnDispatcher();
    expect(a.pid).not.toBe(b.pid);
    let inFlight = 0;
    let peak = 0;
    const slow = await receiverWith(() => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      setTimeout(() => inFlight--, 300);
      return { status: 200, delayMs: 300 };
    });
    const fast = await receiverWith(() => 200);
    await stack.publishTenant("tn_slow", "operator");
    await stack.publishTenant("tn_fast", "team");
    await stack.startDispatcher(); // the in-process instance answers the API calls
    await stack.tenantApplied("tn_slow");
    await stack.tenantApplied("tn_fast");
    await stack.subscribe("tn_slow", "wl_slow", slow.url);
    await stack.subscribe("tn_fast", "wl_fast", fast.url);
    const app = stack.instances[0];
    if (app) {
      await stack.stopDispatcher(app); // only the two child processes deliver
    }

    await stack.publishMatches(Array.from({ length: 40 }, () => stack.match("tn_slow", "wl_slow")));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const sentAt = Date.now();
    await stack.publishMatches(Array.from({ length: 10 }, () => stack.match("tn_fast", "wl_fast")));
    await waitFor(() => fast.received.length >= 10, { what: "the fast tenant's deliveries" });
    const fastDone = Date.now() - sentAt;
    await waitFor(async () => (await states("tn_slow")).complete === 40, {
      timeoutMs: 20_000,
      what: "the slow tenant's deliveries",
    });
    expect(peak).toBe(5);
    // 40 deliveries of 300 ms at 5 at a time take 2.4 s; the other tenant is not queued behind.
    expect(fastDone).toBeLessThan(1_500);
    a.kill("SIGTERM");
    b.kill("SIGTERM");
  }, 40_000);
});

describe("Per-tier caps: Team's 10 concurrent webhooks, held across two dispatcher processes", () => {
  it("a Team tenant never has more than 10 deliveries in flight, and reaches 10", async () => {
    const a = await stack.spawnDispatcher();
    const b = await stack.spawnDispatcher();
    let inFlight = 0;
    let peak = 0;
    const slow = await receiverWith(() => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      setTimeout(() => inFlight--, 300);
      return { status: 200, delayMs: 300 };
    });
    await stack.publishTenant("tn_team_ten", "team");
    const app = await stack.startDispatcher(); // the in-process instance answers the API calls
    await stack.tenantApplied("tn_team_ten");
    await stack.subscribe("tn_team_ten", "wl_team_ten", slow.url);
    await stack.stopDispatcher(app); // only the two child processes deliver
    await stack.publishMatches(
      Array.from({ length: 60 }, () => stack.match("tn_team_ten", "wl_team_ten")),
    );
    await waitFor(async () => (await states("tn_team_ten")).complete === 60, {
      timeoutMs: 45_000,
      what: "the Team tenant's deliveries",
    });
    expect(peak).toBe(10);
    a.kill("SIGTERM");
    b.kill("SIGTERM");
  }, 75_000);
});

describe("lead-view quota", () => {
  it("parks what the quota cannot cover (visible in the log), records views on leadview.recorded, and releases on upgrade", async () => {
    await stack.startDispatcher();
    const receiver = await receiverWith(() => 200);
    const tenant = "tn_quota";
    await stack.publishTenant(tenant, "operator", { lead_views_per_month: 2 });
    await stack.tenantApplied(tenant);
    const endpoint = await stack.subscribe(tenant, "wl_quota", receiver.url);
    const matches = Array.from({ length: 4 }, () => stack.match(tenant, "wl_quota"));
    await stack.publishMatches(matches);
    await waitFor(
      async () => {
        const s = await states(tenant);
        return s.complete === 2 && s.parked === 2;
      },
      { what: "two delivered, two parked" },
    );
    expect(receiver.received).toHaveLength(2);
    const log = await stack.call(
      tenant,
      "GET",
      `/watchlists/wl_quota/webhooks/${endpoint.id}/deliveries?state=parked`,
    );
    expect(log.body.data).toHaveLength(2);
    expect(log.body.data[0].parked_reason).toBe("quota_exhausted");
    expect(Date.parse(log.body.data[0].next_attempt_at)).toBeGreaterThan(Date.now());

    await stack.publishTenant(tenant, "team");
    await waitFor(async () => (await states(tenant)).complete === 4, {
      what: "parked deliveries released",
    });
    expect(new Set(receiver.received.map((r) => r.webhookId)).size).toBe(4);

    // A view is recorded with its delivery's attempt and published from the outbox after it.
    const views: LeadViewRecorded[] = [];
    await waitFor(
      async () => {
        views.length = 0;
        await stack.harness.bus.replay(contracts.leadViewRecorded, {
          onBatch: async (records) => {
            views.push(...records.map((r) => r.value).filter((v) => v.tenant_id === tenant));
          },
        });
        return views.length >= 4;
      },
      { what: "four lead-views recorded" },
    );
    expect(views).toHaveLength(4);
    expect(new Set(views.map((v) => v.surface))).toEqual(new Set(["webhook"]));
    expect(new Set(views.map((v) => v.folio))).toEqual(new Set(matches.map((m) => m.match.folio)));
  });

  it("a tier without webhooks parks deliveries until an upgrade", async () => {
    const receiver = await receiverWith(() => 200);
    const tenant = "tn_downgraded";
    await stack.publishTenant(tenant, "operator");
    await stack.tenantApplied(tenant);
    await stack.subscribe(tenant, "wl_down", receiver.url);
    await stack.publishTenant(tenant, "starter");
    await stack.tenantApplied(tenant);
    await stack.publishMatches([stack.match(tenant, "wl_down")]);
    await waitFor(async () => (await states(tenant)).parked === 1, { what: "parked" });
    const { rows } = await stack.pool.query(
      "SELECT parked_reason FROM dispatcher.deliveries WHERE tenant_id = $1",
      [tenant],
    );
    expect(rows[0].parked_reason).toBe("tier_without_webhooks");
    await stack.publishTenant(tenant, "operator");
    await waitFor(async () => (await states(tenant)).complete === 1, { what: "released" });
  });
});

describe("kill -9 of a dispatcher process mid-burst", () => {
  it("loses nothing: every webhook id of 2,000 deliveries is received at least once", async () => {
    const app = stack.instances[0];
    if (app) {
      await stack.stopDispatcher(app);
    }
    const receiver = await receiverWith(() => ({ status: 200, delayMs: 5 }));
    const tenant = "tn_burst";
    await stack.publishTenant(tenant, "custom", {
      concurrent_webhooks: 64,
      lead_views_per_month: 100_000,
    });
    await stack.startDispatcher();
    await stack.tenantApplied(tenant);
    await stack.subscribe(tenant, "wl_burst", receiver.url);
    const api = stack.instances[0];
    if (api) {
      await stack.stopDispatcher(api);
    }
    const victim = await stack.spawnDispatcher({ LEASE_MS: "3000" });
    const survivor = await stack.spawnDispatcher({ LEASE_MS: "3000" });
    const matches = Array.from({ length: 2_000 }, () => stack.match(tenant, "wl_burst"));
    await stack.publishMatches(matches);
    await waitFor(() => receiver.received.length >= 300, { what: "the burst under way" });
    victim.kill("SIGKILL");
    const unique = () => new Set(receiver.received.map((r) => r.webhookId));
    await waitFor(() => unique().size >= 2_000, {
      timeoutMs: 60_000,
      what: "all 2,000 webhook ids",
    });
    const { rows } = await stack.pool.query(
      "SELECT id FROM dispatcher.deliveries WHERE tenant_id = $1",
      [tenant],
    );
    expect(rows).toHaveLength(2_000);
    const ids = unique();
    for (const row of rows) {
      expect(ids.has(row.id)).toBe(true);
    }
    await waitFor(async () => (await states(tenant)).complete === 2_000, {
      timeoutMs: 20_000,
      what: "every delivery recorded complete",
    });
    // Duplicates, if any, carry a webhook id that was already delivered.
    const duplicates = receiver.received.length - ids.size;
    expect(duplicates).toBeGreaterThanOrEqual(0);
    survivor.kill("SIGTERM");
  }, 120_000);
});
