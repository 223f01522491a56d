// A restart of Redis (it comes back empty, as without persistence) and then a flush of it, on a
// redis-server of this test's own, while a dispatcher process delivers and a gateway serves lead
// reads: the dispatcher stays up and every webhook id arrives; every read is answered or refused
// (503) within the bound, never a 5xx; reads and deliveries resume by themselves; and the
// lead-views the ledger charged are exactly the reads answered with a lead.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { deliveryCounts, readCounts, recordFault } from "./support/chaos-report.ts";
import {
  customTenant,
  gatewayOnRedis,
  timedReads,
  useEdgeStack,
  useWebhookStack,
} from "./support/fault-fixtures.ts";
import { type PrivateRedis, startPrivateRedis } from "./support/private-stores.ts";
import { waitFor } from "./support/webhook-stack.ts";

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
    const trial = await customTenant(leads.stack, 10_000);
    const tenant = "tn_redis_chaos";
    const { child, exited, matches } = await delivery.deliveriesUnderWay({
      tenant,
      watchlist: "wl_redis",
      count: 600,
      underWay: 40,
      leaseMs: 3000,
    });
    // Reads of folios never read before, one after another for the whole fault.
    const { answers, read } = timedReads(leads.stack, trial.key, onRedis.gateway);
    let reading = true;
    const reads = (async () => {
      for (let next = 0; reading && next < leads.folios.length; next++) {
        await read(leads.folios[next] as string);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    const { seenWhileDown, backAt } = await delivery.awayForTwoSeconds(
      () => redisServer.stop(),
      () => redisServer.start(),
    );
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

    const tally = await delivery.expectEveryDelivery(tenant, matches.length, exited);
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
      ...deliveryCounts(matches.length, tally),
      ...readCounts(answers),
      recoveryMs,
      leadViewsCharged: (await charged()).length,
      readsAnswered: answered.length,
    });
    child.kill("SIGTERM");
  }, 150_000);
});
