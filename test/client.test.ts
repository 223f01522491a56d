// The typed client (packages/client) against the real gateway listening on a port, with keys,
// parcels and the quota ledger behind it on real Postgres, Redis and Kafka: limit headers on
// every result, cursor pages as async iterators, typed 402/429 errors and the opt-in retry.
import type { AddressInfo } from "node:net";
import {
  createClient,
  type MatchSummary,
  QuotaExceededError,
  RateLimitedError,
  TerminalHouseError,
} from "@th/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EdgeStack, startEdgeStack } from "./support/edge-stack.ts";

let stack: EdgeStack;
let folios: string[];
let baseUrl: string;
let clock = Date.parse("2026-11-21T12:00:00Z");

beforeAll(async () => {
  stack = await startEdgeStack({ now: () => clock });
  folios = await stack.ingestSample();
  const http = stack.gateway.http;
  if (!http) {
    throw new Error("the gateway has no HTTP app");
  }
  await http.listen({ port: 0, host: "127.0.0.1" });
  baseUrl = `http://127.0.0.1:${(http.server.address() as AddressInfo).port}`;
});
afterAll(() => stack.close());

async function customTenant(limits: { lead_views_per_month?: number; rate_per_minute?: number }) {
  const tenant = await stack.startTrial("custom");
  await stack.setCustomLimits(tenant.tenantId, {
    lead_views_per_month: 10_000,
    rate_per_minute: 100_000,
    ...limits,
  });
  return tenant;
}

describe("typed client: results carry the six limit headers, parsed", () => {
  it("leads.get answers the lead with rate and quota figures equal to the response headers", async () => {
    const tenant = await customTenant({ lead_views_per_month: 50 });
    const client = createClient({ apiKey: tenant.key, baseUrl });
    const { data: lead, limits, response } = await client.leads.get(folios[0] as string);
    expect(lead.folio).toBe(folios[0]);
    const header = (name: string) => response.headers.get(name);
    expect(limits.rateLimit).toBe(100_000);
    expect(limits.rateRemaining).toBe(Number(header("x-ratelimit-remaining")));
    expect(limits.rateResetsAt?.getTime()).toBe(Number(header("x-ratelimit-reset")) * 1000);
    expect(limits.leadViewsLimit).toBe(50);
    expect(limits.leadViewsRemaining).toBe(49);
    expect(limits.quotaResetsAt?.toISOString()).toBe(
      new Date(header("x-quota-resets") as string).toISOString(),
    );
    // A free call answers the same figures (the ledger's own usage figures trail by a moment).
    const usage = await client.usage();
    expect(usage.limits.leadViewsRemaining).toBe(49);
    expect(usage.limits.leadViewsLimit).toBe(50);
  });

  it("the key defaults to TERMINAL_HOUSE_API_KEY, and no key at all is refused before any call", async () => {
    const tenant = await customTenant({});
    const saved = process.env.TERMINAL_HOUSE_API_KEY;
    process.env.TERMINAL_HOUSE_API_KEY = tenant.key;
    try {
      const me = await createClient({ baseUrl }).me();
      expect(me.data.tenant_id).toBe(tenant.tenantId);
      delete process.env.TERMINAL_HOUSE_API_KEY;
      expect(() => createClient({ baseUrl })).toThrow(/TERMINAL_HOUSE_API_KEY/);
    } finally {
      if (saved === undefined) {
        delete process.env.TERMINAL_HOUSE_API_KEY;
      } else {
        process.env.TERMINAL_HOUSE_API_KEY = saved;
      }
    }
  });
});

describe("typed client: cursor pages", () => {
  it("leads.list walks every page as one async iterator, the same leads as the raw pages in order", async () => {
    const tenant = await customTenant({});
    const client = createClient({ apiKey: tenant.key, baseUrl });
    const raw: string[] = [];
    let cursor: string | undefined;
    let rawPages = 0;
    do {
      const page = await client.unwrap(
        client.api.GET("/v1/leads", {
          params: { query: { county: "23", limit: "7", ...(cursor ? { cursor } : {}) } },
        }),
      );
      raw.push(...page.data.leads.map((lead) => lead.folio));
      cursor = page.data.next_cursor ?? undefined;
      rawPages++;
    } while (cursor);
    expect(rawPages).toBeGreaterThan(3);

    const listed = client.leads.list({ county: 23, limit: 7 });
    const seen: string[] = [];
    for await (const lead of listed) {
      seen.push(lead.folio);
    }
    expect(seen).toEqual(raw);
    expect(new Set(seen).size).toBe(seen.length);
    expect(listed.limits?.leadViewsRemaining).toBe(10_000 - seen.length);

    let pages = 0;
    for await (const page of client.leads.list({ county: 23, limit: 7 }).pages()) {
      pages++;
      expect(page.limits.rateLimit).toBe(100_000);
    }
    expect(pages).toBe(rawPages);
  });
});

describe("typed client: polling a watchlist's matches", () => {
  it("walks every match, then resumes from the cursor with only what arrived since", async () => {
    const tenant = await customTenant({});
    const client = createClient({ apiKey: tenant.key, baseUrl });
    const { data: watchlist } = await client.watchlists.create({
      name: "Absentee Miami-Dade",
      recipe: { filters: { counties: [23] }, required_signals: ["absentee_owner"] },
    });
    async function runToEnd() {
      const { data: run } = await client.watchlists.run(watchlist.id);
      for (;;) {
        const { data: state } = await client.watchlists.getRun(watchlist.id, run.id);
        if (state.status === "succeeded") {
          return state.matches_found;
        }
        expect(state.status).not.toBe("failed");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    /**
     * Polls from `cursor` until `count` new matches have come, as a poller would: matches become
     * visible in commit order, a moment after the run says it is done.
     */
    async function pollFor(count: number, cursor: string | undefined) {
      const items: MatchSummary[] = [];
      let at = cursor;
      const deadline = Date.now() + 15_000;
      while (items.length < count && Date.now() < deadline) {
        const poll = client.watchlists.matches(watchlist.id, { cursor: at, limit: 4 });
        items.push(...(await poll.toArray()));
        at = poll.cursor;
        if (items.length < count) {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      return { items, cursor: at };
    }
    const found = await runToEnd();
    expect(found).toBeGreaterThan(10);
    const first = await pollFor(found, undefined);
    expect(first.items).toHaveLength(found);
    expect(first.cursor).toBeDefined();

    // Nothing new: the walk from the kept cursor is empty and keeps the cursor.
    const idle = client.watchlists.matches(watchlist.id, { cursor: first.cursor });
    expect(await idle.toArray()).toEqual([]);
    expect(idle.cursor).toBe(first.cursor);
    expect(idle.limits?.leadViewsRemaining).toBe(10_000);

    const again = await runToEnd();
    const since = await pollFor(again, first.cursor);
    expect(since.items).toHaveLength(again);
    const seen = first.items;
    const earlier = new Set(seen.map((match) => match.match_id));
    expect(since.items.every((match) => !earlier.has(match.match_id))).toBe(true);
  });
});

describe("typed client: typed refusals", () => {
  it("402 quota_exceeded is a QuotaExceededError carrying upgrade_url and quota_resets_at", async () => {
    const tenant = await customTenant({ lead_views_per_month: 1 });
    const client = createClient({ apiKey: tenant.key, baseUrl });
    await client.leads.get(folios[0] as string);
    const refusal = await client.leads.get(folios[1] as string).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(QuotaExceededError);
    const error = refusal as QuotaExceededError;
    expect(error.status).toBe(402);
    expect(error.code).toBe("quota_exceeded");
    expect(error.upgrade_url).toMatch(/^https?:\/\//);
    expect(new Date(error.quota_resets_at).getTime()).toBeGreaterThan(clock);
    expect(error.limits.leadViewsRemaining).toBe(0);
  });

  it("429 rate_limited is a RateLimitedError carrying retry_after_seconds (no retry unless asked)", async () => {
    const tenant = await customTenant({ rate_per_minute: 2 });
    clock += 61_000;
    const client = createClient({ apiKey: tenant.key, baseUrl });
    await client.me();
    await client.me();
    const refusal = await client.me().catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(RateLimitedError);
    const error = refusal as RateLimitedError;
    expect(error.status).toBe(429);
    expect(error.retry_after_seconds).toBeGreaterThan(0);
    expect(error.retry_after_seconds).toBe(error.body?.retry_after_seconds);
    expect(error.limits.rateRemaining).toBe(0);
  });

  it("any other refusal is a TerminalHouseError with the body's code and the limit headers", async () => {
    const tenant = await customTenant({});
    const client = createClient({ apiKey: tenant.key, baseUrl });
    const refusal = await client.leads.get("23-0000000000000").catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(TerminalHouseError);
    expect(refusal).not.toBeInstanceOf(QuotaExceededError);
    expect((refusal as TerminalHouseError).code).toBe("not_found");
    expect((refusal as TerminalHouseError).limits.leadViewsRemaining).toBe(10_000);
  });
});

describe("typed client: opt-in retry honouring Retry-After", () => {
  it("waits the Retry-After the API gave, then the call succeeds", async () => {
    const tenant = await customTenant({ rate_per_minute: 1 });
    clock += 61_000;
    const waits: number[] = [];
    const client = createClient({
      apiKey: tenant.key,
      baseUrl,
      retry: { maxRetries: 2, maxWaitSeconds: 120 },
      // The gateway's clock is the test's: waiting moves it instead of sleeping.
      sleep: async (ms) => {
        waits.push(ms);
        clock += ms;
      },
    });
    await client.me();
    const retried = await client.me();
    expect(retried.response.status).toBe(200);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThanOrEqual(1_000);
    expect(waits[0]).toBeLessThanOrEqual(60_000);
  });

  it("is bounded: past maxRetries, or a Retry-After beyond maxWaitSeconds, the 429 is thrown", async () => {
    const tenant = await customTenant({ rate_per_minute: 1 });
    clock += 61_000;
    const waits: number[] = [];
    const stubborn = createClient({
      apiKey: tenant.key,
      baseUrl,
      retry: { maxRetries: 2, maxWaitSeconds: 120 },
      // Time does not move: every resend is refused again.
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    await stubborn.me();
    await expect(stubborn.me()).rejects.toBeInstanceOf(RateLimitedError);
    expect(waits).toHaveLength(2);

    const impatient = createClient({
      apiKey: tenant.key,
      baseUrl,
      retry: { maxRetries: 5, maxWaitSeconds: 0 },
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    await expect(impatient.me()).rejects.toBeInstanceOf(RateLimitedError);
    expect(waits).toHaveLength(2);
  });

  it("resends a refused POST with its body intact", async () => {
    const tenant = await customTenant({ rate_per_minute: 1 });
    clock += 61_000;
    const client = createClient({
      apiKey: tenant.key,
      baseUrl,
      retry: true,
      sleep: async (ms) => {
        clock += ms;
      },
    });
    await client.me();
    const batch = await client.leads.batch(folios.slice(0, 3));
    expect(batch.data.leads.map((lead) => lead.folio).sort()).toEqual(folios.slice(0, 3).sort());
  });
});

describe("typed client: CSV export", () => {
  it("leads.exportCsv answers the CSV text with its limit headers", async () => {
    const tenant = await customTenant({});
    const client = createClient({ apiKey: tenant.key, baseUrl });
    const { data, limits } = await client.leads.exportCsv({ county: 23, max_rows: 5 });
    const lines = data.trim().split("\n");
    expect(lines[0]).toMatch(/folio/);
    expect(lines).toHaveLength(6);
    // The headers go out before the rows stream, so they show the figures before the charge.
    expect(limits.leadViewsLimit).toBe(10_000);
    expect((await client.usage()).limits.leadViewsRemaining).toBe(10_000 - 5);
  });
});
