// Webhook delivery: headers and signature, the delivery state table, the retry schedule (real
// 1 s and 5 s stages measured), dead-letter timing, replay keeping the webhook id, the log.

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { verifySignature } from "@th/webhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Receiver,
  startReceiver,
  startWebhookStack,
  type WebhookStack,
  waitFor,
} from "./support/webhook-stack.ts";

let stack: WebhookStack;
let receiver: Receiver;
const TENANT = "tn_delivery";

beforeAll(async () => {
  stack = await startWebhookStack();
  // Long stages shrink 1000x (30 s -> 30 ms, 5 min -> 300 ms, 30 min -> 1.8 s); 1 s and 5 s stay real.
  await stack.startDispatcher({ LONG_DELAY_SCALE: "0.001", DELIVERY_TIMEOUT_MS: "600" });
  await stack.publishTenant(TENANT, "team");
  await stack.tenantApplied(TENANT);
  // Each case answers by the path it was subscribed with: /hooks?<status>[,<status>…] per attempt.
  receiver = await startReceiver(({ path, seen }) => {
    const plan = (new URL(path, "http://x").searchParams.get("plan") ?? "200").split(",");
    const step = plan[Math.min(seen, plan.length) - 1] ?? "200";
    if (step === "slow") {
      return { status: 200, delayMs: 2_000 };
    }
    return Number(step);
  });
});

afterAll(async () => {
  await receiver?.close();
  await stack?.close();
});

async function deliverOnce(plan: string) {
  const watchlist = `wl_${plan.replaceAll(",", "_")}_${Math.random().toString(36).slice(2, 8)}`;
  const endpoint = await stack.subscribe(TENANT, watchlist, `${receiver.url}?plan=${plan}`);
  const match = stack.match(TENANT, watchlist);
  await stack.publishMatches([match]);
  const delivery = await waitFor(
    async () =>
      (
        await stack.pool.query(
          "SELECT id FROM dispatcher.deliveries WHERE endpoint_id = $1 AND match_id = $2",
          [endpoint.id, match.match_id],
        )
      ).rows[0] as { id: string } | undefined,
    { what: "the delivery row" },
  );
  return { endpoint, match, webhookId: delivery.id };
}

async function settled(webhookId: string, states: string[], timeoutMs = 15_000) {
  return waitFor(
    async () => {
      const row = await stack.deliveryOf(webhookId);
      return row && states.includes(row.state) ? row : undefined;
    },
    { timeoutMs, what: `delivery ${webhookId} to reach ${states.join("/")}` },
  );
}

describe("a delivery on the wire", () => {
  it("carries the exact headers, a body fixed at creation, and a fresh t + signature per attempt", async () => {
    const { endpoint, match, webhookId } = await deliverOnce("500,200");
    await settled(webhookId, ["complete"]);
    const requests = receiver.of(webhookId);
    expect(requests).toHaveLength(2);
    for (const request of requests) {
      expect(request.contentType).toBe("application/json");
      expect(request.eventType).toBe("watchlist.match");
      expect(request.userAgent).toBe("terminal-house-webhooks/1.0");
      expect(request.webhookId).toMatch(
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/,
      );
      expect(request.signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(verifySignature(request.body, request.signature, [endpoint.secret]).ok).toBe(true);
    }
    // Same bytes on every attempt; the timestamps move with the attempts (1 s apart).
    expect(requests[1]?.body).toBe(requests[0]?.body);
    expect(requests[1]?.signature).not.toBe(requests[0]?.signature);
    const payload = JSON.parse(requests[0]?.body ?? "{}");
    expect(payload).toEqual({
      event_id: match.match_id,
      event_type: "watchlist.match",
      occurred_at: match.occurred_at,
      tenant_id: TENANT,
      watchlist: match.watchlist,
      match: {
        folio: match.match.folio,
        address: match.match.address,
        score: match.match.score,
        signals_fired: match.match.signals_fired,
        owner: match.match.owner,
        valuation: match.match.valuation,
        observed_at: match.match.observed_at,
      },
    });
  });
});

describe("the delivery state table", () => {
  it.each(["200", "201", "204"])("%s completes with no retries", async (status) => {
    const { webhookId } = await deliverOnce(status);
    const row = await settled(webhookId, ["complete"]);
    expect(row.attempts).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    expect(receiver.of(webhookId)).toHaveLength(1);
  });

  it.each(["400", "401", "403", "404", "410", "422"])(
    "%s dead-letters at once, no retries",
    async (status) => {
      const { webhookId } = await deliverOnce(status);
      const row = await settled(webhookId, ["dead_letter"]);
      expect(row.attempts).toBe(1);
      expect(row.dead_letter_reason).toBe("rejected_by_receiver");
      expect(row.last_status_code).toBe(Number(status));
      await new Promise((resolve) => setTimeout(resolve, 1_300));
      expect(receiver.of(webhookId)).toHaveLength(1);
    },
  );

  it.each(["408", "429", "500", "502", "503", "301", "302"])(
    "%s is a failure that retries after 1 s (3xx included: redirects are not followed)",
    async (status) => {
      const { webhookId } = await deliverOnce(`${status},200`);
      const row = await settled(webhookId, ["complete"]);
      expect(row.attempts).toBe(2);
      const [first, second] = receiver.of(webhookId);
      expect(first?.status).toBe(Number(status));
      expect((second?.at ?? 0) - (first?.at ?? 0)).toBeGreaterThanOrEqual(1_000 - 5);
    },
  );

  it("a timeout retries", async () => {
    const { webhookId } = await deliverOnce("slow,200");
    const row = await settled(webhookId, ["complete"]);
    expect(row.attempts).toBe(2);
    const attempts = await stack.pool.query(
      "SELECT failure FROM dispatcher.attempts WHERE delivery_id = $1 ORDER BY attempt",
      [webhookId],
    );
    expect(attempts.rows.map((a) => a.failure)).toEqual(["timeout", null]);
  });

  it("a network error retries", async () => {
    const closed = await startReceiver();
    const url = closed.url;
    await closed.close();
    const watchlist = "wl_network";
    await stack.subscribe(TENANT, watchlist, url);
    const match = stack.match(TENANT, watchlist);
    await stack.publishMatches([match]);
    const row = await waitFor(
      async () =>
        (
          await stack.pool.query(
            "SELECT * FROM dispatcher.deliveries WHERE match_id = $1 AND attempts >= 2",
            [match.match_id],
          )
        ).rows[0],
      { what: "two network attempts" },
    );
    expect(row.last_failure).toBe("network");
    expect(["retrying", "pending"]).toContain(row.state);
  });
});

describe("an answer the database cannot store as sent", () => {
  it("a NUL in a receiver's answer is not stored and fails no delivery, its own or others'", async () => {
    // A UTF-16 "OK", as some frameworks answer: Postgres text cannot hold the NUL bytes.
    const utf16 = createServer((request, response) => {
      request.resume();
      request.on("end", () => response.writeHead(200).end(Buffer.from("OK", "utf16le")));
    });
    await new Promise<void>((resolve) => utf16.listen(0, "127.0.0.1", resolve));
    const port = (utf16.address() as AddressInfo).port;
    try {
      await stack.subscribe(TENANT, "wl_utf16", `http://127.0.0.1:${port}/hooks`);
      await stack.subscribe(TENANT, "wl_beside_utf16", `${receiver.url}?plan=200`);
      const odd = [1, 2, 3].map(() => stack.match(TENANT, "wl_utf16"));
      const plain = [1, 2, 3].map(() => stack.match(TENANT, "wl_beside_utf16"));
      await stack.publishMatches([...odd, ...plain]);
      const rows = await waitFor(
        async () => {
          const { rows } = await stack.pool.query<{ state: string; attempts: number }>(
            "SELECT state, attempts FROM dispatcher.deliveries WHERE match_id = ANY($1::text[])",
            [[...odd, ...plain].map((match) => match.match_id)],
          );
          return rows.length === 6 && rows.every((row) => row.state === "complete")
            ? rows
            : undefined;
        },
        { what: "all six deliveries complete" },
      );
      expect(rows.map((row) => row.attempts)).toEqual([1, 1, 1, 1, 1, 1]);
      // Each attempt is its status alone: no column is left to hold what the receiver sent.
      const { rows: attempts } = await stack.pool.query<{ attempt: Record<string, unknown> }>(
        `SELECT to_jsonb(a) AS attempt FROM dispatcher.attempts a
         JOIN dispatcher.deliveries d ON d.id = a.delivery_id
         WHERE d.match_id = ANY($1::text[])`,
        [odd.map((match) => match.match_id)],
      );
      expect(attempts.map((row) => row.attempt.status_code)).toEqual([200, 200, 200]);
      for (const { attempt } of attempts) {
        expect(Object.keys(attempt)).not.toContain("response_excerpt");
      }
    } finally {
      await new Promise((resolve) => utf16.close(resolve));
    }
  });
});

describe("dispatcher metrics", () => {
  it("count attempts by outcome and attempt number, and gauge parked and dead-lettered deliveries", async () => {
    const { webhookId } = await deliverOnce("503,200");
    await settled(webhookId, ["complete"]);
    const dead = await deliverOnce("410");
    await settled(dead.webhookId, ["dead_letter"]);
    const text = await stack.metricsText();
    expect(text).toMatch(
      /th_delivery_attempts_total\{[^}]*outcome="retrying"[^}]*attempt="1"[^}]*\} [1-9]/,
    );
    expect(text).toMatch(
      /th_delivery_attempts_total\{[^}]*outcome="complete"[^}]*attempt="2"[^}]*\} [1-9]/,
    );
    expect(text).toMatch(/th_deliveries_waiting\{[^}]*state="dead_letter"[^}]*\} [1-9]/);
    expect(text).toMatch(/th_deliveries_waiting\{[^}]*state="parked"[^}]*\} \d/);
  });
});

describe("dispatcher attempt latency", () => {
  it("times each attempt by outcome: a receiver that times out lands in the bucket of the timeout", async () => {
    const bucket = (text: string, le: string) =>
      Number(
        text.match(
          new RegExp(
            `th_delivery_attempt_duration_seconds_bucket\\{[^}]*le="${le}"[^}]*outcome="retrying"[^}]*\\} (\\d+)`,
          ),
        )?.[1] ?? 0,
      );
    const before = await stack.metricsText();
    // The first attempt outlasts DELIVERY_TIMEOUT_MS (600 ms) and is retried; the second completes.
    const { webhookId } = await deliverOnce("slow,200");
    await settled(webhookId, ["complete"]);
    const after = await stack.metricsText();
    const timedOut = (text: string) => bucket(text, "1") - bucket(text, "0.5");
    expect(timedOut(after) - timedOut(before)).toBe(1);
    expect(after).toMatch(
      /th_delivery_attempt_duration_seconds_count\{[^}]*outcome="complete"[^}]*\} [1-9]/,
    );
  });
});

describe("the retry schedule", () => {
  it("runs attempts at 0, 1 s, 5 s (measured in real time), 30 s and 5 min (scaled), then dead-letters 30 min later (scaled)", async () => {
    const { webhookId } = await deliverOnce("500,500,500,500,503");
    const row = await settled(webhookId, ["dead_letter"], 20_000);
    const requests = receiver.of(webhookId);
    expect(requests).toHaveLength(5);
    const gaps = requests.slice(1).map((request, i) => request.at - (requests[i]?.at ?? 0));
    // Real stages: within +250 ms of 1 s and 5 s.
    expect(gaps[0]).toBeGreaterThanOrEqual(1_000 - 5);
    expect(gaps[0]).toBeLessThanOrEqual(1_250);
    expect(gaps[1]).toBeGreaterThanOrEqual(5_000 - 5);
    expect(gaps[1]).toBeLessThanOrEqual(5_250);
    // Scaled stages: 30 ms and 300 ms, within the same +250 ms.
    expect(gaps[2]).toBeGreaterThanOrEqual(30 - 5);
    expect(gaps[2]).toBeLessThanOrEqual(30 + 250);
    expect(gaps[3]).toBeGreaterThanOrEqual(300 - 5);
    expect(gaps[3]).toBeLessThanOrEqual(300 + 250);
    // Dead letter 30 min (scaled: 1.8 s) after the fifth attempt, held 30 days.
    const deadAfter = row.dead_lettered_at.getTime() - (requests[4]?.at ?? 0);
    expect(deadAfter).toBeGreaterThanOrEqual(1_800 - 50);
    expect(deadAfter).toBeLessThanOrEqual(1_800 + 250);
    expect(row.dead_letter_reason).toBe("attempts_exhausted");
    expect(row.hold_until.getTime() - row.dead_lettered_at.getTime()).toBe(30 * 86_400_000);
    const attempts = await stack.pool.query(
      "SELECT attempt, status_code, state FROM dispatcher.attempts WHERE delivery_id = $1 ORDER BY attempt",
      [webhookId],
    );
    expect(attempts.rows.map((a) => a.status_code)).toEqual([500, 500, 500, 500, 503]);
    expect(attempts.rows.map((a) => a.state)).toEqual([
      "retrying",
      "retrying",
      "retrying",
      "retrying",
      "exhausted",
    ]);
  }, 30_000);
});
