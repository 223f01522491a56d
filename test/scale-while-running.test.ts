// Scaling while work is under way, as an autoscaler does it: instances join mid-run and leave
// with SIGTERM, each draining as in production. Nothing is lost, a redelivery keeps its id, no
// tenant's concurrency cap is exceeded and the retry schedule is kept.
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { contracts, deliveryRetryLadder } from "@th/contracts";
import { createTestDatabase } from "@th/db/testing";
import { compileRecipe, compileVersions, RecipeIndex } from "@th/matcher/domain";
import { judgeParcel } from "@th/matcher/judge";
import { migrations as matcherMigrations } from "@th/matcher/migrations";
import { realisticRecipe, rng, syntheticParcel, syntheticRecipe } from "@th/matcher/testing";
import { createWatchlistStore } from "@th/matcher/watchlists";
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
  await stack.harness.bus.provision([contracts.parcelIngested]);
});

afterAll(async () => {
  await stack?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A service in a process of its own (a script in test/support); resolves once it is ready. */
function spawnChild(script: string, env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(import.meta.dirname, "support", script)], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    child.stdout?.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("ready")) {
        resolve(child);
      }
    });
    child.once("exit", (code) => reject(new Error(`${script} exited with ${code}`)));
  });
}

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

describe("matcher instances 1 -> 3 -> 1 during an ingest", () => {
  it("produces every match exactly once per watchlist and parcel, judged by its id", async () => {
    const db = await createTestDatabase([matcherMigrations]);
    const brokers = stack.harness.brokers.join(",");
    const children: ChildProcess[] = [];
    try {
      const random = rng(20261127);
      const store = createWatchlistStore(db.poolFor("matcher"), { maxPerTenant: 100 });
      const recipes = Array.from({ length: 60 }, (_, at) =>
        at % 3 === 0 ? syntheticRecipe(random, { broad: true }) : realisticRecipe(random),
      );
      const created: Array<{ id: string }> = [];
      for (const [at, recipe] of recipes.entries()) {
        created.push(
          await store.create({ tenantId: `tn_m${at % 6}`, name: `Watchlist ${at}`, recipe }),
        );
      }
      const index = new RecipeIndex(
        recipes.flatMap((recipe, at) =>
          compileVersions({ id: created[at]?.id ?? "", tenantId: "t", name: "n" }, [
            { version: 1, recipe: compileRecipe(recipe).recipe, effectiveFromMs: 0 },
          ]),
        ),
      );
      const matcher = () =>
        spawnChild("matcher-child.ts", {
          DATABASE_URL: db.url,
          KAFKA_BROKERS: brokers,
          WATCHLIST_POLL_MS: "1000",
          LOG_LEVEL: "fatal",
        });
      children.push(await matcher());
      const observedAt = new Date(Date.now() + 1000).toISOString();
      const expected = new Set<string>();
      const waves = 15;
      const perWave = 400;
      for (let wave = 0; wave < waves; wave++) {
        if (wave === 3) {
          children.push(await matcher(), await matcher());
        }
        if (wave === 9) {
          // Scale in: the two that joined drain and leave; their partitions move back.
          for (const child of children.slice(1)) {
            child.kill("SIGTERM");
          }
        }
        const parcels = Array.from({ length: perWave }, (_, n) =>
          syntheticParcel(random, wave * perWave + n, { observedAt, ingestId: "ing_scale" }),
        );
        for (const parcel of parcels) {
          for (const hit of judgeParcel(index, parcel, observedAt)) {
            expected.add(`${hit.event.watchlist.id} ${parcel.folio}`);
          }
        }
        await stack.harness.bus.publish(contracts.parcelIngested, parcels);
        await sleep(300);
      }
      await Promise.all(children.slice(1).map(exited));
      expect(children.slice(1).map((child) => child.exitCode)).toEqual([0, 0]);
      expect(expected.size).toBeGreaterThan(100);

      const idsByPair = new Map<string, Set<string>>();
      await waitFor(
        async () => {
          idsByPair.clear();
          await stack.harness.bus.replay(contracts.matchFound, {
            onBatch: async (records) => {
              for (const { value } of records) {
                const pair = `${value.watchlist.id} ${value.match.folio}`;
                idsByPair.set(pair, (idsByPair.get(pair) ?? new Set()).add(value.match_id));
              }
            },
          });
          return idsByPair.size >= expected.size;
        },
        { timeoutMs: 90_000, intervalMs: 500, what: "every expected match on match.found" },
      );
      expect(new Set(idsByPair.keys())).toEqual(expected);
      // A record delivered twice carries its id again; never a second id for the same match.
      expect([...idsByPair.values()].filter((ids) => ids.size !== 1)).toEqual([]);
    } finally {
      for (const child of children) {
        child.kill("SIGKILL");
      }
      await db.drop();
    }
  }, 240_000);
});

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
