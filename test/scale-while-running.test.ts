// Scaling while work is under way, as an autoscaler does it: instances join mid-run and leave
// with SIGTERM, each draining as in production. Nothing is lost, a redelivery keeps its id, no
// tenant's concurrency cap is exceeded and the retry schedule is kept.
import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { deliveryRetryLadder } from "@th/contracts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  startReceiver,
  startWebhookStack,
  TEST_DISPATCHER_ENV,
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

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve();
    } else {
      child.once("exit", () => resolve());
    }
  });
}

/** A stable pick of about one delivery in twenty, whose first attempt the receiver refuses. */
function refusedOnce(webhookId: string): boolean {
  return (createHash("sha256").update(webhookId).digest()[0] ?? 1) % 20 === 0;
}

describe("dispatcher instances 1 -> 4 -> 1 during a run", () => {
  it("receives every webhook id, redeliveries keep their id, caps and the retry schedule hold", async () => {
    const caps = { tn_scale_team: 10, tn_scale_operator: 5 } as const;
    const tenants = Object.keys(caps) as Array<keyof typeof caps>;
    const inFlight = new Map<string, number>();
    const peak = new Map<string, number>();
    const firstRefusal = new Map<string, number>();
    const retryDelays: number[] = [];
    const receiver = await startReceiver(({ webhookId, seen, body }) => {
      const tenant = (JSON.parse(body) as { tenant_id: string }).tenant_id;
      if (seen === 1 && refusedOnce(webhookId)) {
        firstRefusal.set(webhookId, Date.now());
        return 503;
      }
      const refusedAt = firstRefusal.get(webhookId);
      if (refusedAt !== undefined && seen === 2) {
        retryDelays.push(Date.now() - refusedAt);
      }
      const now = (inFlight.get(tenant) ?? 0) + 1;
      inFlight.set(tenant, now);
      peak.set(tenant, Math.max(peak.get(tenant) ?? 0, now));
      setTimeout(() => inFlight.set(tenant, (inFlight.get(tenant) ?? 1) - 1), 15);
      return { status: 200, delayMs: 15 };
    });
    try {
      await stack.publishTenant("tn_scale_team", "team", { lead_views_per_month: 100_000 });
      await stack.publishTenant("tn_scale_operator", "operator", {
        lead_views_per_month: 100_000,
      });
      // The in-process instance answers the subscription calls, then leaves the work to children.
      const api = await stack.startDispatcher();
      for (const tenant of tenants) {
        await stack.tenantApplied(tenant);
        await stack.subscribe(tenant, `wl_${tenant}`, receiver.url);
      }
      await stack.stopDispatcher(api);

      // Matches arrive in waves, each once the previous one has had its first attempts: the
      // tenants stay within their caps' throughput, so a retry waits for its schedule and not
      // behind a burst queued ahead of it, whatever this machine's speed.
      const waves = 20;
      const perWave = 60;
      const total = waves * perWave;
      const attempted = () => new Set(receiver.received.map((r) => r.webhookId)).size;
      const unique = () =>
        new Set(receiver.received.filter((r) => r.status === 200).map((r) => r.webhookId));
      const first = await stack.spawnDispatcher();
      const added: ChildProcess[] = [];
      for (let wave = 0; wave < waves; wave++) {
        if (wave === 4) {
          added.push(await stack.spawnDispatcher());
          added.push(await stack.spawnDispatcher());
          added.push(await stack.spawnDispatcher());
        }
        if (wave === 12) {
          // Scale in as Kubernetes does: SIGTERM, and each instance drains the work in hand.
          for (const child of added) {
            child.kill("SIGTERM");
          }
        }
        await stack.publishMatches(
          Array.from({ length: perWave }, (_, i) => {
            const tenant = tenants[i % tenants.length] as string;
            return stack.match(tenant, `wl_${tenant}`);
          }),
        );
        await waitFor(() => attempted() >= (wave + 1) * perWave, {
          timeoutMs: 60_000,
          what: `wave ${wave + 1}'s first attempts`,
        });
      }
      await Promise.all(added.map(exited));
      expect(added.map((child) => child.exitCode)).toEqual([0, 0, 0]);

      await waitFor(() => unique().size >= total, {
        timeoutMs: 60_000,
        what: `all ${total} webhook ids with one instance left`,
      });
      const { rows } = await stack.pool.query<{ id: string; match_id: string }>(
        "SELECT id, match_id FROM dispatcher.deliveries WHERE tenant_id = ANY($1::text[])",
        [tenants],
      );
      expect(rows).toHaveLength(total);
      const ids = unique();
      for (const row of rows) {
        expect(ids.has(row.id)).toBe(true);
      }
      // Every request for one match carried one webhook id, however often it was sent.
      const idsByMatch = new Map<string, Set<string>>();
      for (const request of receiver.received) {
        const matchId = (JSON.parse(request.body) as { event_id: string }).event_id;
        idsByMatch.set(matchId, (idsByMatch.get(matchId) ?? new Set()).add(request.webhookId));
      }
      expect(idsByMatch.size).toBe(total);
      expect([...idsByMatch.values()].every((set) => set.size === 1)).toBe(true);
      for (const tenant of tenants) {
        expect(peak.get(tenant)).toBeLessThanOrEqual(caps[tenant]);
      }
      // The first retry is due a second after the refusal (the spec's table): never earlier, and
      // late by no more than the sweep's grace for a retry record a rebalance held up.
      const scheduled = deliveryRetryLadder[0]?.delayMs ?? Number.NaN;
      const grace = Number(TEST_DISPATCHER_ENV.RETRY_SWEEP_GRACE_MS);
      expect(firstRefusal.size).toBeGreaterThan(0);
      expect(retryDelays).toHaveLength(firstRefusal.size);
      expect(Math.min(...retryDelays)).toBeGreaterThanOrEqual(scheduled - 50);
      expect(Math.max(...retryDelays)).toBeLessThan(scheduled + grace + 5_000);
      first.kill("SIGTERM");
      await exited(first);
    } finally {
      await receiver.close();
    }
  }, 240_000);
});
