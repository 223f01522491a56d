// Lead reads while Redis is down and after it comes back empty, on a redis-server of this test's
// own (the machine's Redis is shared): a read answers 503 `unavailable` with Retry-After and its
// request id within 2 s, never 500 and never a hang, and reads work again once Redis is back,
// without charging twice what was charged before.
import { startInternalServer } from "@th/service-kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readCounts, recordFault } from "./support/chaos-report.ts";
import {
  customTenant,
  gatewayOnRedis,
  leadViewsRemaining,
  timedReads,
  useEdgeStack,
} from "./support/fault-fixtures.ts";
import { type PrivateRedis, startPrivateRedis } from "./support/private-stores.ts";

const reads = useEdgeStack();
let redisServer: PrivateRedis;
let onRedis: Awaited<ReturnType<typeof gatewayOnRedis>>;

beforeAll(async () => {
  redisServer = await startPrivateRedis();
  onRedis = await gatewayOnRedis(reads.stack, redisServer.url);
});

afterAll(async () => {
  await onRedis?.close();
  await redisServer?.destroy();
});

describe("a lead read while Redis is down", () => {
  it("answers 503 unavailable with Retry-After within 2 s, and reads resume when Redis is back empty", async () => {
    const trial = await customTenant(reads.stack, 10);
    const { answers, read } = timedReads(reads.stack, trial.key, onRedis.gateway);
    const first = await read(reads.folios[0] as string);
    expect(first.statusCode).toBe(200);

    await redisServer.stop();
    for (const folio of [reads.folios[1], reads.folios[0]] as string[]) {
      const started = Date.now();
      const refused = await read(folio);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(refused.statusCode).toBe(503);
      const body = refused.json();
      expect(body.error).toBe("unavailable");
      expect(body.request_id).toBe(refused.headers["x-request-id"]);
      expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
      // The tenant's windows are in Redis: the six carry the values that say nothing is known.
      expect(refused.headers["x-ratelimit-limit"]).toBe("0");
      expect(refused.headers["x-ratelimit-remaining"]).toBe("0");
      expect(Number(refused.headers["x-ratelimit-reset"])).toBeGreaterThan(0);
      expect(refused.headers["x-quota-lead-views-limit"]).toBe("0");
      expect(refused.headers["x-quota-lead-views-remaining"]).toBe("0");
      expect(Date.parse(String(refused.headers["x-quota-resets"]))).toBeGreaterThan(0);
    }

    // Back, and empty (a restart without persistence, or a flush).
    await redisServer.start();
    const backAt = Date.now();
    let again = await read(reads.folios[0] as string);
    while (again.statusCode !== 200 && Date.now() - backAt < 10_000) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      again = await read(reads.folios[0] as string);
    }
    const recoveryMs = Date.now() - backAt;
    expect(again.statusCode).toBe(200);
    // The folio read before the outage is not charged again the same day.
    expect(leadViewsRemaining(again)).toBe(9);
    recordFault({
      fault: "Redis stopped, then back empty, during reads",
      ...readCounts(answers),
      recoveryMs,
    });
  }, 60_000);

  it("turns readiness false while Redis is away and true again when it is back; liveness stays true", async () => {
    const probes = await startInternalServer({
      port: 0,
      host: "127.0.0.1",
      checks: { redis: async () => (await onRedis.redis.ping()) === "PONG" },
    });
    const probe = async (path: string) =>
      (await fetch(`http://127.0.0.1:${probes.port}${path}`)).status;
    try {
      expect(await probe("/readyz")).toBe(200);
      await redisServer.stop();
      // A store that does not answer fails its check after 1 s; the probe never waits longer.
      const asked = Date.now();
      expect(await probe("/readyz")).toBe(503);
      expect(Date.now() - asked).toBeLessThan(1_300);
      expect(await probe("/healthz")).toBe(200);
      await redisServer.start();
      const backAt = Date.now();
      while ((await probe("/readyz")) !== 200) {
        expect(Date.now() - backAt).toBeLessThan(3_000);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(await probe("/healthz")).toBe(200);
    } finally {
      await probes.close();
    }
  });
});
