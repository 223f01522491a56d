import { Bus, on, partitionOfKey } from "@th/bus";
import { commonShape, defineConfig } from "@th/config";
import { contracts, type KeyIssued, type TenantChanged } from "@th/contracts";
import { keyIssued, tenantChanged } from "@th/contracts/samples";
import { inTransaction } from "@th/db";
import { inSpan, startTelemetry } from "@th/telemetry";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  createOutboxRelay,
  enqueueEvent,
  outboxMigrations,
  outboxShard,
  rotated,
} from "./outbox.ts";
import { createTestHarness, type TestHarness } from "./testing.ts";

const config = defineConfig(commonShape).load({});
let harness: TestHarness<typeof config>;

beforeAll(async () => {
  harness = await createTestHarness({
    config,
    migrations: [{ schema: "outbox_test", dir: outboxMigrations.current }],
    topics: [contracts.keyIssued, contracts.tenantChanged],
  });
});
afterAll(() => harness.close());
// A registered tracer, so spans carry real trace ids that the outbox can keep.
const telemetry = startTelemetry({ service: "outbox-test", enabled: true });
afterAll(() => telemetry.shutdown());

/** The rows a failed flush left unpublished, which a relay on a healthy bus then publishes. */
async function expectRelayedLater(unpublished: number): Promise<void> {
  const { rows } = await harness.pool.query(
    "SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL",
  );
  expect(rows[0].n).toBe(unpublished);
  const relay = createOutboxRelay({ pool: harness.pool, bus: harness.bus, logger: harness.logger });
  expect(await relay.flush()).toBe(unpublished);
}

describe("outbox", () => {
  it("publishes events of committed transactions only, in order, once", async () => {
    const received: KeyIssued[] = [];
    const consumer = await harness.bus.consume({
      group: "outbox-test",
      subscriptions: [
        on(contracts.keyIssued, async (message) => {
          received.push(message.value);
          return undefined;
        }),
      ],
    });
    const relay = createOutboxRelay({
      pool: harness.pool,
      bus: harness.bus,
      logger: harness.logger,
    });
    await inTransaction(harness.pool, async (client) => {
      await enqueueEvent(client, contracts.keyIssued, { ...keyIssued, key_id: "k1" });
      await enqueueEvent(client, contracts.keyIssued, { ...keyIssued, key_id: "k2" });
    });
    await expect(
      inTransaction(harness.pool, async (client) => {
        await enqueueEvent(client, contracts.keyIssued, { ...keyIssued, key_id: "rolled-back" });
        throw new Error("change failed");
      }),
    ).rejects.toThrow("change failed");
    expect(await relay.flush()).toBe(2);
    expect(await relay.flush()).toBe(0);
    await vi.waitFor(() => expect(received.map((event) => event.key_id)).toEqual(["k1", "k2"]), {
      timeout: 15_000,
    });
    await consumer.stop();
  });

  it("publishes rows committed while a drain is already running", async () => {
    const relay = createOutboxRelay({
      pool: harness.pool,
      bus: harness.bus,
      logger: harness.logger,
    });
    await inTransaction(harness.pool, (client) =>
      enqueueEvent(client, contracts.keyIssued, { ...keyIssued, key_id: "during-1" }),
    );
    const first = relay.flush();
    await inTransaction(harness.pool, (client) =>
      enqueueEvent(client, contracts.keyIssued, { ...keyIssued, key_id: "during-2" }),
    );
    const second = relay.flush();
    await Promise.all([first, second]);
    const { rows } = await harness.pool.query(
      "SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL",
    );
    expect(rows[0].n).toBe(0);
  });

  it("keeps events that could not be published for the next attempt", async () => {
    // A real client whose broker is gone: nothing listens on port 1.
    const brokenBus = new Bus({
      brokers: ["127.0.0.1:1"],
      clientId: "outbox-test",
      logger: harness.logger,
      retries: 0,
    });
    await inTransaction(harness.pool, (client) =>
      enqueueEvent(client, contracts.keyIssued, { ...keyIssued, key_id: "k3" }),
    );
    const broken = createOutboxRelay({
      pool: harness.pool,
      bus: brokenBus,
      logger: harness.logger,
    });
    await expect(broken.flush()).rejects.toThrow();
    await brokenBus.close();
    await expectRelayedLater(1);
  });

  it("publishes each row once when several replicas relay the same table at once", async () => {
    await harness.pool.query("DELETE FROM outbox");
    await inTransaction(harness.pool, async (client) => {
      for (let i = 0; i < 40; i++) {
        await enqueueEvent(client, contracts.keyIssued, { ...keyIssued, key_id: `replica-${i}` });
      }
    });
    const replicas = [0, 1, 2].map(() =>
      createOutboxRelay({
        pool: harness.pool,
        bus: harness.bus,
        logger: harness.logger,
        batchSize: 5,
      }),
    );
    const published = await Promise.all(replicas.map((relay) => relay.flush()));
    await vi.waitFor(async () => {
      const { rows } = await harness.pool.query(
        "SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL",
      );
      expect(rows[0].n).toBe(0);
    });
    const again = await Promise.all(replicas.map((relay) => relay.flush()));
    expect([...published, ...again].reduce((sum, n) => sum + n, 0)).toBeLessThanOrEqual(40);
    await Promise.all(replicas.map((relay) => relay.stop()));
  });

  it("holds no transaction or row lock while the broker is down, and loses nothing", async () => {
    await harness.pool.query("DELETE FROM outbox");
    // A real client whose broker is gone, retrying for a few seconds before it gives up.
    const downBus = new Bus({
      brokers: ["127.0.0.1:1"],
      clientId: "outbox-outage-test",
      logger: harness.logger,
      retries: 4,
    });
    await inTransaction(harness.pool, async (client) => {
      for (const keyId of ["outage-1", "outage-2"]) {
        await enqueueEvent(client, contracts.keyIssued, { ...keyIssued, key_id: keyId });
      }
    });
    const relay = createOutboxRelay({ pool: harness.pool, bus: downBus, logger: harness.logger });
    let settled = false;
    const failing = relay.flush().finally(() => {
      settled = true;
    });
    failing.catch(() => {});
    // While the broker's retries run: no session of this database sits in a transaction, and the
    // rows are free for any writer.
    const deadline = Date.now() + 1_500;
    let checks = 0;
    while (Date.now() < deadline && !settled) {
      const { rows } = await harness.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
      );
      expect(rows[0]?.n).toBe(0);
      await inTransaction(harness.pool, async (client) => {
        await client.query("SET LOCAL lock_timeout = '200ms'");
        await client.query("SELECT id FROM outbox WHERE published_at IS NULL FOR UPDATE NOWAIT");
      });
      checks++;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(settled).toBe(false);
    expect(checks).toBeGreaterThan(3);
    await expect(failing).rejects.toThrow();
    await downBus.close();
    await expectRelayedLater(2);
  });

  it("publishes each event in the trace of the work that enqueued it, not the relay's", async () => {
    const received: { keyId: string; traceparent: string | undefined }[] = [];
    const consumer = await harness.bus.consume({
      group: "outbox-trace-test",
      subscriptions: [
        on(contracts.keyIssued, async (message) => {
          received.push({
            keyId: message.value.key_id,
            traceparent: message.headers.traceparent,
          });
          return undefined;
        }),
      ],
    });
    const traceIds = new Map<string, string>();
    for (const keyId of ["traced-a", "traced-b"]) {
      await inSpan(`issue ${keyId}`, {}, async (span) => {
        traceIds.set(keyId, span.spanContext().traceId);
        await inTransaction(harness.pool, (client) =>
          enqueueEvent(client, contracts.keyIssued, { ...keyIssued, key_id: keyId }),
        );
      });
    }
    await inTransaction(harness.pool, (client) =>
      enqueueEvent(client, contracts.keyIssued, { ...keyIssued, key_id: "traced-none" }),
    );
    const relay = createOutboxRelay({
      pool: harness.pool,
      bus: harness.bus,
      logger: harness.logger,
    });
    await inSpan("relay tick", {}, () => relay.flush());
    await vi.waitFor(
      () => expect(received.filter((event) => event.keyId.startsWith("traced-"))).toHaveLength(3),
      { timeout: 15_000 },
    );
    // Written outside any trace, it joins none, not the trace that asked for the flush.
    expect(received.find((event) => event.keyId === "traced-none")?.traceparent).toBeUndefined();
    for (const event of received.filter((entry) => traceIds.has(entry.keyId))) {
      const traceId = traceIds.get(event.keyId);
      expect(traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(event.traceparent?.split("-")[1]).toBe(traceId);
    }
    await consumer.stop();
  });

  it("deletes rows published longer ago than the retention, never unpublished or recent ones", async () => {
    await harness.pool.query("DELETE FROM outbox");
    await inTransaction(harness.pool, async (client) => {
      for (const keyId of ["old-published", "recent-published", "old-unpublished"]) {
        await enqueueEvent(client, contracts.keyIssued, { ...keyIssued, key_id: keyId });
      }
    });
    const keyOf = "payload->>'key_id'";
    await harness.pool.query(
      `UPDATE outbox SET published_at = now() - interval '2 hours' WHERE ${keyOf} = 'old-published'`,
    );
    await harness.pool.query(
      `UPDATE outbox SET published_at = now() - interval '10 minutes' WHERE ${keyOf} = 'recent-published'`,
    );
    await harness.pool.query(
      `UPDATE outbox SET created_at = now() - interval '2 hours' WHERE ${keyOf} = 'old-unpublished'`,
    );
    const relay = createOutboxRelay({
      pool: harness.pool,
      bus: harness.bus,
      logger: harness.logger,
      retentionMs: 3_600_000,
    });
    expect(await relay.purge()).toBe(1);
    const { rows } = await harness.pool.query<{ key_id: string }>(
      `SELECT ${keyOf} AS key_id FROM outbox ORDER BY id`,
    );
    expect(rows.map((row) => row.key_id)).toEqual(["recent-published", "old-unpublished"]);
    expect(await relay.purge()).toBe(0);
  });

  it("lets replicas publish different shards at once while one shard's broker call hangs", async () => {
    await harness.pool.query("DELETE FROM outbox");
    // Four tenants whose events fall on four different shards.
    const byShard = new Map<number, string>();
    for (let n = 0; byShard.size < 4; n++) {
      const tenant = `tn_shard_${n}`;
      byShard.set(outboxShard(contracts.keyIssued, { ...keyIssued, tenant_id: tenant }), tenant);
    }
    const tenants = [...byShard.values()];
    await inTransaction(harness.pool, async (client) => {
      for (const tenant of tenants) {
        await enqueueEvent(client, contracts.keyIssued, { ...keyIssued, tenant_id: tenant });
      }
    });
    // The first relay's broker call hangs until released, holding its shard's lock.
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered = () => {};
    const hanging = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const stalledBus = {
      publishRecords: async (...args: Parameters<Bus["publishRecords"]>) => {
        entered();
        await released;
        return harness.bus.publishRecords(...args);
      },
    } as unknown as Bus;
    const stalled = createOutboxRelay({
      pool: harness.pool,
      bus: stalledBus,
      logger: harness.logger,
      batchSize: 1,
    });
    const stalledFlush = stalled.flush();
    await hanging;
    const healthy = createOutboxRelay({
      pool: harness.pool,
      bus: harness.bus,
      logger: harness.logger,
      batchSize: 1,
    });
    // Everything but the one row the stalled relay holds goes out meanwhile.
    expect(await healthy.flush()).toBe(tenants.length - 1);
    release();
    expect(await stalledFlush).toBe(1);
    const { rows } = await harness.pool.query(
      "SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL",
    );
    expect(rows[0].n).toBe(0);
  });

  it("publishes one key's events in commit order when several replicas relay its table", async () => {
    await harness.pool.query("DELETE FROM outbox");
    const received: KeyIssued[] = [];
    const consumer = await harness.bus.consume({
      group: "outbox-order-test",
      fromBeginning: false,
      subscriptions: [
        on(contracts.keyIssued, async (message) => {
          received.push(message.value);
          return undefined;
        }),
      ],
    });
    const tenants = ["tn_order_a", "tn_order_b", "tn_order_c"];
    for (let round = 0; round < 10; round++) {
      await inTransaction(harness.pool, async (client) => {
        for (const tenant of tenants) {
          const value = { ...keyIssued, tenant_id: tenant, key_id: `${tenant}-${round}` };
          await enqueueEvent(client, contracts.keyIssued, value);
        }
      });
    }
    const replicas = [0, 1, 2].map(() =>
      createOutboxRelay({
        pool: harness.pool,
        bus: harness.bus,
        logger: harness.logger,
        batchSize: 2,
      }),
    );
    await Promise.all(replicas.map((relay) => relay.flush()));
    await vi.waitFor(() => expect(received.length).toBeGreaterThanOrEqual(30), { timeout: 15_000 });
    for (const tenant of tenants) {
      const seen = received
        .filter((event) => event.tenant_id === tenant)
        .map((event) => event.key_id);
      expect(seen).toEqual(Array.from({ length: 10 }, (_, round) => `${tenant}-${round}`));
    }
    await consumer.stop();
  });

  it("publishes a batch whose topics alternate in one request per topic, each in commit order", async () => {
    await harness.pool.query("DELETE FROM outbox");
    const tenant = "tn_mixed_topics";
    const keys: KeyIssued[] = [];
    const changes: TenantChanged[] = [];
    const consumer = await harness.bus.consume({
      group: "outbox-mixed-test",
      fromBeginning: false,
      subscriptions: [
        on(contracts.keyIssued, async (message) => {
          keys.push(message.value);
          return undefined;
        }),
        on(contracts.tenantChanged, async (message) => {
          changes.push(message.value);
          return undefined;
        }),
      ],
    });
    // One tenant, so every row is in one shard, its two topics alternating in id order.
    await inTransaction(harness.pool, async (client) => {
      for (let n = 0; n < 10; n++) {
        await enqueueEvent(client, contracts.keyIssued, {
          ...keyIssued,
          tenant_id: tenant,
          key_id: `mixed-${n}`,
        });
        await enqueueEvent(client, contracts.tenantChanged, {
          ...tenantChanged,
          tenant_id: tenant,
          revision: n,
        });
      }
    });
    const requests: string[] = [];
    const countingBus = {
      publishRecords: (...args: Parameters<Bus["publishRecords"]>) => {
        requests.push(args[0].topic);
        return harness.bus.publishRecords(...args);
      },
    } as unknown as Bus;
    const relay = createOutboxRelay({
      pool: harness.pool,
      bus: countingBus,
      logger: harness.logger,
    });
    expect(await relay.flush()).toBe(20);
    expect(requests.sort()).toEqual([contracts.keyIssued.topic, contracts.tenantChanged.topic]);
    await vi.waitFor(
      () => {
        expect(keys.map((event) => event.key_id)).toEqual(
          Array.from({ length: 10 }, (_, n) => `mixed-${n}`),
        );
        expect(changes.map((event) => event.revision)).toEqual(
          Array.from({ length: 10 }, (_, n) => n),
        );
      },
      { timeout: 15_000 },
    );
    await consumer.stop();
  });
});

describe("outbox shards", () => {
  it("puts an event in the shard of the partition its key falls on", () => {
    for (const tenant of ["tn_a", "tn_b", "tn_01HZX3Q8M4"]) {
      const value = { ...keyIssued, tenant_id: tenant };
      expect(outboxShard(contracts.keyIssued, value)).toBe(
        partitionOfKey(tenant, contracts.keyIssued.partitions),
      );
    }
  });

  it("starts a pass at any shard and wraps around", () => {
    expect(rotated([1, 2, 3], 1)).toEqual([2, 3, 1]);
    expect(rotated([1, 2, 3], 4)).toEqual([2, 3, 1]);
    expect(rotated([1, 2, 3], -1)).toEqual([3, 1, 2]);
    expect(rotated([], 5)).toEqual([]);
  });
});
