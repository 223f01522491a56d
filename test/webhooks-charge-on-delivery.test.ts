// A webhook lead-view is charged only when the lead is delivered: reserved against the quota
// before an attempt, written (`leadview.recorded`, through the outbox) by the statement that
// records the 2xx attempt, and given back when the attempt delivers nothing. Each case checks the
// Redis counter, the events and the quota ledger's usage endpoint agree.
import type { ChildProcess } from "node:child_process";
import { contracts, type LeadViewRecorded } from "@th/contracts";
import { LEAD_VIEW_COUNTER_PREFIX, utcDay } from "@th/quota";
import { signedHeaders } from "@th/service-kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Receiver,
  type Script,
  startReceiver,
  startWebhookStack,
  type WebhookStack,
  waitFor,
} from "./support/webhook-stack.ts";

let stack: WebhookStack;
const scripts = new Map<string, Script>();
let receiver: Receiver;

beforeAll(async () => {
  stack = await startWebhookStack({ ledger: true });
  await stack.startDispatcher({ LONG_DELAY_SCALE: "0.001", DELIVERY_TIMEOUT_MS: "600" });
  // Each test scripts the answers of its own watchlist's path.
  receiver = await startReceiver((request) => {
    const script = scripts.get(request.path.split("/").pop() ?? "");
    return script ? script(request) : 200;
  });
});

afterAll(async () => {
  await receiver?.close();
  await stack?.close();
});

/** A tenant (team tier, anniversary today) with one endpoint answering `script`. */
async function tenantWith(name: string, script: Script) {
  const tenant = `tn_cod_${name}`;
  const watchlist = `wl_cod_${name}`;
  scripts.set(name, script);
  await stack.publishTenant(tenant, "team");
  await stack.tenantApplied(tenant);
  const endpoint = await stack.subscribe(tenant, watchlist, `${receiver.url}/${name}`);
  return { tenant, watchlist, endpoint };
}

/** Lead-views charged in the tenant's Redis counter (the period starts today). */
async function counter(tenant: string): Promise<number> {
  const key = `th:${LEAD_VIEW_COUNTER_PREFIX}${tenant}:${utcDay(new Date())}`;
  return Number((await stack.harness.redis.get(key)) ?? 0);
}

async function views(tenant: string): Promise<LeadViewRecorded[]> {
  const found: LeadViewRecorded[] = [];
  await stack.harness.bus.replay(contracts.leadViewRecorded, {
    onBatch: async (records) => {
      found.push(...records.map((r) => r.value).filter((v) => v.tenant_id === tenant));
    },
  });
  return found;
}

/** `used` on the quota ledger's usage endpoint. */
async function ledgerUsed(tenant: string): Promise<number | undefined> {
  const url = `/internal/v1/usage/${tenant}`;
  const response = await fetch(`${stack.ledgerUrl}${url}`, {
    headers: signedHeaders("quota-ledger", {
      method: "GET",
      url,
      route: "/internal/v1/usage/:tenant_id",
      headers: stack.headersFor(tenant),
    }),
  });
  return response.status === 200 ? ((await response.json()) as { used: number }).used : undefined;
}

/**
 * Waits until the counter, the published views and the ledger all say `expected`, then checks
 * they stay there (nothing late arrives from the outbox).
 */
async function agreeOn(tenant: string, expected: number) {
  const figures = async () => ({
    counter: await counter(tenant),
    views: (await views(tenant)).length,
    ledger: await ledgerUsed(tenant),
  });
  const want = { counter: expected, views: expected, ledger: expected };
  await waitFor(
    async () => {
      const now = await figures();
      return JSON.stringify(now) === JSON.stringify(want);
    },
    { timeoutMs: 15_000, what: `counter, views and ledger at ${expected} for ${tenant}` },
  ).catch(async (error: Error) => {
    throw new Error(`${error.message}: ${JSON.stringify(await figures())}`);
  });
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(await figures()).toEqual(want);
}

async function stateOf(id: string): Promise<string> {
  return (await stack.deliveryOf(id))?.state;
}

async function deliveriesOf(tenant: string) {
  const { rows } = await stack.pool.query<{
    id: string;
    state: string;
    attempts: number;
    charged_at: Date | null;
  }>("SELECT id, state, attempts, charged_at FROM dispatcher.deliveries WHERE tenant_id = $1", [
    tenant,
  ]);
  return rows;
}

describe("webhook lead-views are charged only on delivery", () => {
  it("charges a delivered lead-view exactly once, with the 2xx attempt's record", async () => {
    const { tenant, watchlist } = await tenantWith("ok", () => 200);
    await stack.publishMatches([stack.match(tenant, watchlist)]);
    const [delivery] = await waitFor(async () => {
      const rows = await deliveriesOf(tenant);
      return rows[0]?.state === "complete" ? rows : undefined;
    });
    expect(delivery?.charged_at).toBeInstanceOf(Date);
    await agreeOn(tenant, 1);
    expect((await views(tenant))[0]?.request_id).toBe(delivery?.id);
  });

  it("charges nothing while a delivery is retrying, then once when a retry delivers", async () => {
    let open = false;
    const { tenant, watchlist } = await tenantWith("retry", () => (open ? 200 : 503));
    await stack.publishMatches([stack.match(tenant, watchlist)]);
    const [waiting] = await waitFor(async () => {
      const rows = await deliveriesOf(tenant);
      return rows[0]?.state === "retrying" ? rows : undefined;
    });
    expect(waiting?.charged_at).toBeNull();
    // The failed attempt's reservation went back; no view was written for it.
    await agreeOn(tenant, 0);
    open = true;
    await waitFor(async () => (await stateOf(waiting?.id as string)) === "complete", {
      what: "the retry delivered",
    });
    await agreeOn(tenant, 1);
    expect(receiver.of(waiting?.id as string).length).toBeGreaterThanOrEqual(2);
  });

  it("gives back and never charges deliveries that are dead-lettered (at once, or after every retry)", async () => {
    const { tenant, watchlist } = await tenantWith("dead", (request) =>
      request.body.includes('"rejected-now"') ? 410 : 500,
    );
    const rejected = stack.match(tenant, watchlist);
    const exhausted = stack.match(tenant, watchlist);
    await stack.publishMatches([
      { ...rejected, watchlist: { ...rejected.watchlist, name: "rejected-now" } },
      exhausted,
    ]);
    const rows = await waitFor(
      async () => {
        const all = await deliveriesOf(tenant);
        return all.length === 2 && all.every((row) => row.state === "dead_letter")
          ? all
          : undefined;
      },
      { timeoutMs: 30_000, what: "both dead-lettered" },
    );
    expect(rows.map((row) => row.attempts).sort()).toEqual([1, 5]);
    expect(rows.every((row) => row.charged_at === null)).toBe(true);
    await agreeOn(tenant, 0);
  });

  it("does not charge again when a delivered delivery is replayed", async () => {
    const { tenant, watchlist, endpoint } = await tenantWith("replay", () => 200);
    await stack.publishMatches([stack.match(tenant, watchlist)]);
    const [delivery] = await waitFor(async () => {
      const rows = await deliveriesOf(tenant);
      return rows[0]?.state === "complete" ? rows : undefined;
    });
    await agreeOn(tenant, 1);
    const id = delivery?.id as string;
    const replay = await stack.call(
      tenant,
      "POST",
      `/watchlists/${watchlist}/webhooks/${endpoint.id}/deliveries/${id}:replay`,
    );
    expect(replay.status).toBe(202);
    await waitFor(async () => receiver.of(id).length === 2 && (await stateOf(id)) === "complete", {
      what: "the replay delivered",
    });
    await agreeOn(tenant, 1);
  });

  it("charges once when a dispatcher dies between the receiver's 2xx and its record, and the delivery is sent again", async () => {
    let victim: ChildProcess | undefined;
    const { tenant, watchlist } = await tenantWith("crash", (request) => {
      if (request.seen === 1) {
        // The process that sent the request is stopped before the 2xx goes out and killed after,
        // so it never runs again to record it, however busy the machine.
        victim?.kill("SIGSTOP");
        setImmediate(() => victim?.kill("SIGKILL"));
      }
      return 200;
    });
    // Only the process under test runs: the in-process dispatcher stops for this case.
    for (const app of [...stack.instances]) {
      await stack.stopDispatcher(app);
    }
    victim = await stack.spawnDispatcher({ LEASE_MS: "3000" });
    const exited = new Promise((resolve) => victim?.once("exit", resolve));
    await stack.publishMatches([stack.match(tenant, watchlist)]);
    await exited;
    const [before] = await deliveriesOf(tenant);
    const id = before?.id as string;
    expect(receiver.of(id)).toHaveLength(1);
    expect(before?.state).toBe("pending");
    expect(before?.charged_at).toBeNull();
    // The views reserved by the dead process are still counted, not yet recorded.
    expect(await counter(tenant)).toBe(1);
    expect(await views(tenant)).toHaveLength(0);

    await stack.startDispatcher({ LONG_DELAY_SCALE: "0.001", DELIVERY_TIMEOUT_MS: "600" });
    await waitFor(async () => (await stateOf(id)) === "complete", {
      timeoutMs: 20_000,
      what: "the redelivery after the lease expired",
    });
    expect(receiver.of(id)).toHaveLength(2);
    await agreeOn(tenant, 1);
  }, 90_000);

  it("keeps the usage endpoint, the ledger and the counters in agreement after a mixed run", async () => {
    const { tenant, watchlist } = await tenantWith("mixed", (request) => {
      const kind = /"kind-(\w+)"/.exec(request.body)?.[1];
      if (kind === "gone") {
        return 410;
      }
      if (kind === "late") {
        return request.seen >= 2 ? 200 : 502;
      }
      return 200;
    });
    const kinds = ["ok", "late", "gone"] as const;
    const matches = Array.from({ length: 30 }, (_, i) => {
      const match = stack.match(tenant, watchlist);
      return { ...match, watchlist: { ...match.watchlist, name: `kind-${kinds[i % 3]}` } };
    });
    // Two endpoints' worth of one folio on one day is one lead-view: repeat a few folios, a gone
    // one among them. Both its deliveries fail for good; when they share its charge, each gives
    // up its own hold and the folio goes back with the last, so the count holds however the two
    // interleave.
    const repeats = matches.slice(0, 3).map((match) => ({
      ...stack.match(tenant, watchlist),
      watchlist: match.watchlist,
      match: match.match,
    }));
    await stack.publishMatches([...matches, ...repeats]);
    const rows = await waitFor(
      async () => {
        const all = await deliveriesOf(tenant);
        return all.length === 33 &&
          all.every((row) => row.state === "complete" || row.state === "dead_letter")
          ? all
          : undefined;
      },
      { timeoutMs: 30_000, what: "every delivery settled" },
    );
    expect(rows.filter((row) => row.state === "dead_letter")).toHaveLength(10 + 1);
    // 20 folios delivered (ok and late); the repeats add none.
    const { rows: folios } = await stack.pool.query<{ n: number }>(
      `SELECT count(DISTINCT folio)::int AS n FROM dispatcher.deliveries
        WHERE tenant_id = $1 AND state = 'complete'`,
      [tenant],
    );
    expect(folios[0]?.n).toBe(20);
    const counted = new Map<string, number>();
    await waitFor(async () => {
      counted.clear();
      for (const view of await views(tenant)) {
        counted.set(view.folio, (counted.get(view.folio) ?? 0) + 1);
      }
      return counted.size === 20;
    });
    // A dead-lettered folio's reservation is given back just after its state is written, so the
    // counter is waited for like the ledger, then must stay there.
    const settled = async () => ({
      counter: await counter(tenant),
      ledger: await ledgerUsed(tenant),
    });
    await waitFor(async () => JSON.stringify(await settled()) === '{"counter":20,"ledger":20}', {
      what: "counter and ledger at 20",
    }).catch(async (error: Error) => {
      throw new Error(`${error.message}: ${JSON.stringify(await settled())}`);
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await settled()).toEqual({ counter: 20, ledger: 20 });
  });
});
