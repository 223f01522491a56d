// A restart of Redis (it comes back empty, as without persistence) and then a flush of it, on a
// redis-server of this test's own, while a dispatcher process delivers and a gateway serves lead
// reads: the dispatcher stays up and every webhook id arrives; every read is answered or refused
// (503) within the bound, never a 5xx; reads and deliveries resume by themselves; and the
// lead-views the ledger charged are exactly the reads answered with a lead.
import type { ChildProcess } from "node:child_process";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { recordFault } from "./support/chaos-report.ts";
import { gatewayOnRedis, useEdgeStack, useWebhookStack } from "./support/fault-fixtures.ts";
import { type PrivateRedis, startPrivateRedis } from "./support/private-stores.ts";
import { exitOf, subscribedTenant, waitFor } from "./support/webhook-stack.ts";

let redisServer: PrivateRedis;
const delivery = useWebhookStack({
  receiver: () => ({ status: 200, delayMs: 10 }),
  before: async () => {
    redisServer = await startPrivateRedis();
    return { env: { REDIS_URL: redisServer.url } };
  },
  after: async () => {
    await redisServer?.destroy();
  },
  closeMayFail: true,
});
const leads = useEdgeStack();
let onRedis: Awaited<ReturnType<typeof gatewayOnRedis>>;

beforeAll(async () => {
  // The stack's own client sees the outage too; it reconnects by itself.
  delivery.stack.harness.redis.on("error", () => {});
  onRedis = await gatewayOnRedis(leads.stack, redisServer.url);
});

afterAll(async () => {
  await onRedis?.close();
});

describe("a Redis restart and a flush under deliveries and reads", () => {
  it("keeps the dispatcher up and every read bounded; nothing lost, nothing charged unanswered", async () => {
    const tenant = "tn_redis_chaos";
    await subscribedTenant(delivery.stack, tenant, "wl_redis", delivery.receiver.url);
    const child: ChildProcess = await delivery.stack.spawnDispatcher({ LEASE_MS: "3000" });
    const exited = exitOf(child);

    const trial = await leads.stack.startTrial("custom");
    await leads.stack.setCustomLimits(trial.tenantId, {
      lead_views_per_month: 10_000,
      rate_per_minute: 100_000,
    });
    // Reads of folios never read before, one after another for the whole fault.
    const answers: { folio: string; status: number; ms: number; at: number }[] = [];
    let reading = true;
    const reads = (async () => {
      for (let next = 0; reading && next < leads.folios.length; next++) {
        const folio = leads.folios[next] as string;
        const started = Date.now();
        const response = await leads.stack.request("GET", `/v1/leads/${folio}`, {
          key: trial.key,
          via: onRedis.gateway,
        });
        answers.push({ folio, status: response.statusCode, ms: Date.now() - started, at: started });
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();

    const matches = Array.from({ length: 600 }, () => delivery.stack.match(tenant, "wl_redis"));
    await delivery.stack.publishMatches(matches);
    await waitFor(() => delivery.receiver.received.length >= 40, { what: "deliveries under way" });
    await redisServer.stop();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const seenWhileDown = delivery.receiver.received.length;
    await redisServer.start();
    const backAt = Date.now();
    await waitFor(
      () =>
        exited() ??
        (delivery.receiver.received.length > seenWhileDown &&
          answers.some((answer) => answer.at >= backAt && answer.status === 200)),
      { timeoutMs: 30_000, what: "deliveries and reads after Redis returned" },
    );
    const recoveryMs = Date.now() - backAt;
    // And a flush while everything runs.
    const admin = new Redis(redisServer.url);
    await admin.flushall();
    admin.disconnect();
    const flushedAt = Date.now();
    await waitFor(() => answers.some((answer) => answer.at > flushedAt + 1_000), {
      timeoutMs: 30_000,
      what: "reads after the flush",
    });
    reading = false;
    await reads;

    const tally = await delivery.tally(tenant, matches.length, exited);
    expect(exited()).toBeUndefined();
    expect(tally.missing).toBe(0);
    expect(tally.rows).toBe(matches.length);
    const fiveHundreds = answers.filter((answer) => answer.status >= 500 && answer.status !== 503);
    expect(fiveHundreds).toEqual([]);
    expect(answers.filter((answer) => ![200, 503].includes(answer.status))).toEqual([]);
    const slowest = Math.max(...answers.map((answer) => answer.ms));
    expect(slowest).toBeLessThan(2_500);
    expect(
      answers.filter((answer) => answer.at > flushedAt && answer.status === 200).length,
    ).toBeGreaterThan(0);
    const answered = answers
      .filter((answer) => answer.status === 200)
      .map((answer) => answer.folio);
    const charged = async () =>
      (
        await leads.stack.harness.pool.query<{ folio: string }>(
          "SELECT folio FROM quota_ledger.lead_views WHERE tenant_id = $1",
          [trial.tenantId],
        )
      ).rows.map((row) => row.folio);
    await vi.waitFor(async () => expect((await charged()).sort()).toEqual([...answered].sort()), {
      timeout: 15_000,
      interval: 200,
    });
    expect(recoveryMs).toBeLessThan(30_000);
    recordFault({
      fault: "Redis restart (back empty) and flush under deliveries and reads",
      matches: matches.length,
      uniqueDeliveries: tally.received,
      duplicates: tally.duplicates,
      lost: tally.lost,
      fiveHundreds: fiveHundreds.length,
      unavailable: answers.filter((answer) => answer.status === 503).length,
      slowestAnswerMs: slowest,
      recoveryMs,
      leadViewsCharged: (await charged()).length,
      readsAnswered: answered.length,
    });
    child.kill("SIGTERM");
  }, 150_000);
});
