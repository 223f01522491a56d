// The dispatcher's scale-out work: signed deliveries of match.found to a loopback receiver in
// this process. The receiver also checks what scale-out must not break: duplicates, losses,
// each tenant's concurrency cap, and the first retry's delay against the schedule.
import type { ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { contracts, deliveryRetryLadder, type MatchFound, type TenantChanged } from "@th/contracts";
import { createTestHarness, type TestHarness } from "@th/service-kit/testing";
import { buildApp } from "../../services/webhook-dispatcher/src/app.ts";
import { readConfig } from "../../services/webhook-dispatcher/src/config.ts";
import { migrations } from "../../services/webhook-dispatcher/src/db/migrations.ts";
import { DISPATCHER_TOPICS } from "../../test/support/dispatcher-topics.ts";
import { startBrokerProcess } from "./broker-process.ts";
import { benchMatches } from "./matches.ts";
import { percentile, pidsOf, sleep, spawnUntilReady } from "./processes.ts";
import type { ScaleDriver, ScaleOptions } from "./scale-driver.ts";

const CHILD = fileURLToPath(
  new URL("../../test/support/webhook-dispatcher-child.ts", import.meta.url),
);
/**
 * Team tenants unless `--tenants` says otherwise: their caps are the work's concurrency. With 24
 * (240 deliveries at once in all) four instances at 0.15 of a core are bound by the caps, not
 * their quota: each holds a quarter of the tenants, waits on each delivery's claim and answer
 * with its slots full, and runs below its quota. 96 leave every instance's quota the bound.
 */
const DEFAULT_TENANTS = 96;
/** Team's cap, the spec's; the receiver holds each request so that the cap is reached. */
const CONCURRENCY_CAP = 10;
const HOLD_MS = 5;
const MATCHES_GROUP = "webhook-dispatcher.matches";
/** One delivery in FAIL_ONE_IN is refused once, so the first retry's delay is measured. */
const FAIL_ONE_IN = 50;
const ENV = { WEBHOOK_ALLOW_LOOPBACK_HTTP: "true", LOG_LEVEL: "fatal", CHILD_SERVICE_TIMINGS: "1" };

function tenant(id: string): TenantChanged {
  return {
    tenant_id: id,
    revision: 1,
    tier: "team",
    status: "active",
    limits: {
      lead_views_per_month: 10_000_000,
      rate_per_minute: 600,
      concurrent_webhooks: CONCURRENCY_CAP,
      seats: 5,
    },
    billing_anniversary: new Date().toISOString().slice(0, 10),
    trial_ends_at: null,
    changed_at: new Date().toISOString(),
  };
}

function matches(count: number, tenants: readonly string[]): MatchFound[] {
  return benchMatches(count, tenants, { id: "wl_scale", name: "Scale" });
}

/** Whether the receiver refuses this delivery's first attempt: a stable pick by its id. */
function failsOnce(id: string): boolean {
  return (createHash("sha256").update(id).digest()[0] ?? 1) % FAIL_ONE_IN === 0;
}

/** What the receiver saw during one round. */
class Receipts {
  readonly delivered = new Set<string>();
  readonly refusedAt = new Map<string, number>();
  readonly retryDelays: number[] = [];
  readonly inFlight = new Map<string, number>();
  maxInFlight = 0;
  duplicates = 0;
  firstAt = 0;
  lastFirstTryAt = 0;
  firstTryDelivered = 0;

  receive(id: string, tenantId: string, res: ServerResponse): void {
    const now = Date.now();
    if (this.delivered.has(id)) {
      this.duplicates++;
      res.writeHead(200).end();
      return;
    }
    if (!this.refusedAt.has(id) && failsOnce(id)) {
      this.refusedAt.set(id, now);
      res.writeHead(503).end();
      return;
    }
    const inFlight = (this.inFlight.get(tenantId) ?? 0) + 1;
    this.inFlight.set(tenantId, inFlight);
    this.maxInFlight = Math.max(this.maxInFlight, inFlight);
    setTimeout(() => {
      this.inFlight.set(tenantId, (this.inFlight.get(tenantId) ?? 1) - 1);
      this.delivered.add(id);
      this.firstAt ||= now;
      const refused = this.refusedAt.get(id);
      if (refused === undefined) {
        this.lastFirstTryAt = Date.now();
        this.firstTryDelivered++;
      } else {
        this.retryDelays.push(now - refused);
      }
      res.writeHead(200).end();
    }, HOLD_MS);
  }
}

type Harness = TestHarness<ReturnType<typeof readConfig>>;
type DatabaseStats = Awaited<ReturnType<typeof databaseStats>>;

/** The loopback receiver: each request is handed to the round's receipts with its tenant. */
async function startReceiver(
  receive: (id: string, tenantId: string, res: ServerResponse) => void,
): Promise<{ server: Server; url: string }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const payload = JSON.parse(Buffer.concat(chunks).toString()) as { tenant_id: string };
      receive(String(req.headers["x-flpf-webhook-id"]), payload.tenant_id, res);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks` };
}

/**
 * The round's tenants. With `oneBusy`, only tenants of the first bucket of four, which is also
 * the first of two and the whole of one (the claim's `hashtext` split): all the work is one
 * member's, and the others, told not to help, stay idle in the group.
 */
async function tenantIds(harness: Harness, count: number, oneBusy = false): Promise<string[]> {
  if (!oneBusy) {
    return Array.from({ length: count }, (_, i) => `tn_scale_${i}`);
  }
  const { rows } = await harness.db.pool.query<{ id: string }>(
    `SELECT id FROM (SELECT 'tn_scale_' || i AS id FROM generate_series(0, $1::int * 16) i) t
      WHERE (hashtext(id) & 2147483647) % 4 = 0 ORDER BY id LIMIT $1`,
    [count],
  );
  return rows.map((row) => row.id);
}

/** Every tenant on the Team tier with one endpoint at the receiver. */
async function subscribeTenants(
  harness: Harness,
  receiverUrl: string,
  tenants: readonly string[],
): Promise<void> {
  await harness.bus.publish(contracts.tenantChanged, tenants.map(tenant));
  const setup = await buildApp(harness, {
    watchlists: { owns: async () => true },
    loadUsage: async () => ({ used: 0, foliosToday: [] }),
  });
  for (const tenantId of tenants) {
    await setup.endpoints.create(
      { tenantId, memberId: "mb_scale", keyId: "key_scale" },
      "wl_scale",
      { url: receiverUrl, events: ["watchlist.match"] },
    );
  }
}

/** The database's transaction and row counters: what the instances ask of Postgres. */
async function databaseStats(harness: Harness, database: string) {
  const { rows } = await harness.db.pool.query<{
    transactions: string;
    read: string;
    written: string;
  }>(
    `SELECT xact_commit + xact_rollback AS transactions, tup_returned + tup_fetched AS read,
            tup_inserted + tup_updated + tup_deleted AS written
       FROM pg_stat_database WHERE datname = $1`,
    [database],
  );
  const row = rows[0];
  return {
    transactions: Number(row?.transactions ?? 0),
    read: Number(row?.read ?? 0),
    written: Number(row?.written ?? 0),
  };
}

/**
 * When the dispatchers' consumers had committed every match.found: every row inserted. Compared
 * partition by partition, as a partition that never held a record has no committed offset ("-1").
 */
async function watchInserted(harness: Harness): Promise<number> {
  const target = await harness.bus.highWaterMarks("match.found");
  for (;;) {
    const committed = await harness.bus.committedOffsets(MATCHES_GROUP, "match.found");
    const behind = [...target].some(
      ([partition, end]) => end !== "0" && BigInt(end) > BigInt(committed.get(partition) ?? "-1"),
    );
    if (!behind) {
      return Date.now();
    }
    await sleep(50);
  }
}

/**
 * When every event the round's attempts wrote to the outbox so far (delivery.attempted,
 * leadview.recorded) was published: the relay's work is part of a delivery's, and a round that
 * ended before it would leave it to the next round (the warm-up's to the measured one).
 */
async function outboxPublished(harness: Harness): Promise<number> {
  const { rows } = await harness.db.pool.query<{ last: string | null }>(
    "SELECT max(id)::text AS last FROM dispatcher.outbox",
  );
  for (;;) {
    const { rows: left } = await harness.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM dispatcher.outbox
        WHERE published_at IS NULL AND id <= $1::bigint`,
      [rows[0]?.last ?? "0"],
    );
    if (left[0]?.n === 0) {
      return Date.now();
    }
    await sleep(50);
  }
}

async function waitFor(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) {
    await sleep(20);
  }
  return done();
}

/** What a round checks beyond its rate: losses, duplicates, the cap, retries, Postgres load. */
function roundNotes(
  current: Receipts,
  perRound: number,
  before: DatabaseStats,
  after: DatabaseStats,
): Array<[string, string]> {
  const schedule = deliveryRetryLadder[0]?.delayMs ?? Number.NaN;
  const per = (key: keyof DatabaseStats) =>
    ((after[key] - before[key]) / Math.max(1, current.delivered.size)).toFixed(1);
  return [
    ["unique deliveries / published", `${current.delivered.size} / ${perRound}`],
    ["lost", String(perRound - current.delivered.size)],
    ["duplicate attempts (a delivered id sent again)", String(current.duplicates)],
    [
      "most concurrent deliveries of one tenant / tier cap",
      `${current.maxInFlight} / ${CONCURRENCY_CAP}`,
    ],
    [
      `first retry delay, ms (${current.retryDelays.length} refused once)`,
      `p50 ${percentile(current.retryDelays, 50)}, max ${Math.max(...current.retryDelays)} (schedule ${schedule})`,
    ],
    [
      "Postgres per delivery: transactions, rows read, rows written",
      `${per("transactions")}, ${per("read")}, ${per("written")}`,
    ],
  ];
}

export async function dispatcherDriver(options: ScaleOptions): Promise<ScaleDriver> {
  const perRound = options.work ?? 3_000;
  const env = options.oneBusy ? { ...ENV, CHILD_HELP_OTHERS: "0" } : ENV;
  const broker = await startBrokerProcess(["--in-memory"]);
  const harness = await createTestHarness({
    config: readConfig(env),
    migrations: [migrations],
    brokers: [broker.address],
    topics: DISPATCHER_TOPICS,
  });
  const tenants = await tenantIds(harness, options.tenants ?? DEFAULT_TENANTS, options.oneBusy);
  let receipts = new Receipts();
  const receiver = await startReceiver((id, tenantId, res) => receipts.receive(id, tenantId, res));
  await subscribeTenants(harness, receiver.url, tenants);
  const database = new URL(harness.db.url).pathname.slice(1);

  return {
    unit: "deliveries",
    database,
    shared: () => ({
      broker: broker.pid === undefined ? [] : [broker.pid],
      redis: pidsOf("redis-server"),
    }),
    startInstance: async () =>
      (
        await spawnUntilReady(
          [CHILD],
          {
            ...env,
            DATABASE_URL: harness.db.url,
            REDIS_URL: harness.config.REDIS_URL,
            REDIS_PREFIX: harness.redis.options.keyPrefix ?? "",
            KAFKA_BROKERS: broker.address,
            NODE_ENV: "test",
          },
          /^ready$/,
        )
      ).child,
    async settle(_instances: readonly ChildProcess[]) {
      for (;;) {
        const { rows } = await harness.db.pool.query("SELECT count(*)::int AS n FROM tenants");
        if (rows[0]?.n === tenants.length) {
          break;
        }
        await sleep(100);
      }
      // The group's rebalance, with every instance joined, before the clock starts.
      await sleep(3_000);
    },
    async round() {
      const statsBefore = await databaseStats(harness, database);
      receipts = new Receipts();
      const batch = matches(perRound, tenants);
      for (let i = 0; i < batch.length; i += 1_000) {
        await harness.bus.publish(contracts.matchFound, batch.slice(i, i + 1_000));
      }
      const current = receipts;
      const inserted = watchInserted(harness);
      const firstTries = () => current.firstTryDelivered + current.refusedAt.size;
      await waitFor(() => firstTries() >= perRound, 300_000);
      const publishedAt = await outboxPublished(harness);
      const seconds = (publishedAt - current.firstAt) / 1000;
      const insertedAt = await inserted;
      await waitFor(() => current.delivered.size >= perRound, 60_000);
      // Backends report their counts within a second of going idle.
      await sleep(1_200);
      const stats = await databaseStats(harness, database);
      return {
        completed: current.firstTryDelivered,
        seconds,
        notes: [
          // Rows inserted as late as the last first try mean the consumers' inserts paced it.
          [
            "every delivery row inserted after (of the round's seconds)",
            `${((insertedAt - current.firstAt) / 1000).toFixed(1)} s (of ${seconds.toFixed(1)} s)`,
          ],
          // The round ends once the attempts' events are published; a relay that lags the
          // sends shows as the gap between the last first try and that moment.
          [
            "last first try, then its events published, after",
            `${((current.lastFirstTryAt - current.firstAt) / 1000).toFixed(1)} s, ${seconds.toFixed(1)} s`,
          ],
          ...roundNotes(current, perRound, statsBefore, stats),
        ],
      };
    },
    async close() {
      receiver.server.closeAllConnections();
      receiver.server.close();
      await harness.close();
      await broker.stop();
    },
  };
}
