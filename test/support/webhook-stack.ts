// The webhook dispatcher on real Postgres, Redis and a dev broker, with a loopback receiver that
// answers scripted statuses. Loopback HTTP is allowed through the development flag.

import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Bus } from "@th/bus";
import { contracts, type MatchFound, type TenantChanged, type Tier } from "@th/contracts";
import { matchFound as sampleMatch } from "@th/contracts/samples";
import { createPool, type Pool } from "@th/db";
import type { UsageLoader } from "@th/quota";
import { buildApp as buildLedger } from "@th/quota-ledger/app";
import { readConfig as readLedgerConfig } from "@th/quota-ledger/config";
import { migrations as ledgerMigrations } from "@th/quota-ledger/migrations";
import { createMetrics, INTERNAL_HEADERS, type Metrics, unavailableStore } from "@th/service-kit";
import {
  createTestHarness,
  signedInject,
  TEST_CONSUMER_TIMINGS,
  type TestHarness,
} from "@th/service-kit/testing";
import { buildApp } from "@th/webhook-dispatcher/app";
import { readConfig } from "@th/webhook-dispatcher/config";
import { migrations } from "@th/webhook-dispatcher/migrations";
import { DISPATCHER_TOPICS } from "./dispatcher-topics.ts";

export { DISPATCHER_TOPICS };

/** Settings every test dispatcher shares; a test adds its own. */
export const TEST_DISPATCHER_ENV: Record<string, string> = {
  WEBHOOK_ALLOW_LOOPBACK_HTTP: "true",
  LOG_LEVEL: "fatal",
  POLL_MS: "20",
  LEASE_MS: "4000",
  RETRY_SWEEP_GRACE_MS: "3000",
};

interface ReceivedRequest {
  webhookId: string;
  signature: string;
  eventType: string;
  userAgent: string;
  contentType: string;
  body: string;
  /** W3C trace context of the attempt, when tracing is on. */
  traceparent: string | undefined;
  tracestate: string | undefined;
  at: number;
  status: number;
}

export type Script = (request: {
  webhookId: string;
  seen: number;
  body: string;
  path: string;
}) => number | { status: number; delayMs?: number };

/** A loopback HTTP receiver; `script` picks each answer (by default 200). */
export async function startReceiver(script: Script = () => 200) {
  const received: ReceivedRequest[] = [];
  const seen = new Map<string, number>();
  let current = script;
  const server: Server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const webhookId = String(req.headers["x-flpf-webhook-id"] ?? "");
      const count = (seen.get(webhookId) ?? 0) + 1;
      seen.set(webhookId, count);
      const answer = current({ webhookId, seen: count, body, path: req.url ?? "/" });
      const { status, delayMs } =
        typeof answer === "number" ? { status: answer, delayMs: 0 } : answer;
      received.push({
        webhookId,
        signature: String(req.headers["x-flpf-signature"] ?? ""),
        eventType: String(req.headers["x-flpf-event-type"] ?? ""),
        userAgent: String(req.headers["user-agent"] ?? ""),
        contentType: String(req.headers["content-type"] ?? ""),
        body,
        traceparent: req.headers.traceparent as string | undefined,
        tracestate: req.headers.tracestate as string | undefined,
        at: Date.now(),
        status,
      });
      const reply = () => {
        if (!res.destroyed) {
          res.writeHead(status, { "content-type": "text/plain" });
          res.end(`answered ${status}`);
        }
      };
      if (delayMs) {
        setTimeout(reply, delayMs);
      } else {
        reply();
      }
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    setScript(next: Script) {
      current = next;
    },
    of(webhookId: string) {
      return received.filter((request) => request.webhookId === webhookId);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

export async function waitFor<T>(
  probe: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  options: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 15_000);
  for (;;) {
    const value = await probe();
    if (value) {
      return value as T;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${options.what ?? "a condition"}`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 20));
  }
}

/** A watchlist id that the stub directory says belongs to another tenant. */
export const FOREIGN_WATCHLIST = "wl_someone_else";
/** Watchlists the matcher no longer has (a test deletes one by adding it here). */
export const DELETED_WATCHLISTS = new Set<string>();

type Harness = TestHarness<ReturnType<typeof readConfig>>;
type Dispatcher = Awaited<ReturnType<typeof buildApp>>;

/** The quota ledger on the stack's stores, listening on a free port, when a test asks for it. */
async function startLedger(harness: Harness) {
  const ledger = await buildLedger({
    ...harness,
    config: {
      ...readLedgerConfig({}),
      DATABASE_URL: harness.db.url,
      KAFKA_BROKERS: harness.brokers,
    },
    pool: harness.db.poolFor("quota_ledger"),
  });
  let url: string | undefined;
  if (ledger.http) {
    await ledger.http.listen({ port: 0, host: "127.0.0.1" });
    url = `http://127.0.0.1:${(ledger.http.server.address() as AddressInfo).port}`;
    await ledger.start();
  }
  return { ledger, url };
}

/**
 * In-process dispatcher instances, each with its own pool, bus and metrics registry (several
 * share the database, Redis and consumer groups). Without a ledger, usage starts at zero.
 */
function dispatcherFleet(harness: Harness, ledgerUrl: string | undefined, hasLedger: boolean) {
  const pools: Pool[] = [];
  const registries: Metrics[] = [];
  const instances: Dispatcher[] = [];
  const buses: Bus[] = [];

  async function startDispatcher(
    env: Record<string, string> = {},
    overrides: { loadUsage?: UsageLoader; helpOthers?: boolean } = {},
  ) {
    const config = {
      ...readConfig({
        ...TEST_DISPATCHER_ENV,
        ...(ledgerUrl ? { LEDGER_URL: ledgerUrl } : {}),
        ...env,
      }),
      DATABASE_URL: harness.db.url,
      REDIS_URL: harness.config.REDIS_URL,
      KAFKA_BROKERS: harness.brokers,
    };
    const pool = createPool({ url: harness.db.url, schema: migrations.schema, max: 20 });
    const bus = new Bus({
      brokers: harness.brokers,
      clientId: `dispatcher-${instances.length}`,
      logger: harness.logger,
      consumerTimings: TEST_CONSUMER_TIMINGS,
      isUnavailable: (error) => unavailableStore(error) !== undefined,
    });
    pools.push(pool);
    buses.push(bus);
    const metrics = createMetrics("webhook-dispatcher");
    registries.push(metrics);
    const app = await buildApp(
      { config, logger: harness.logger, pool, redis: harness.redis, bus, metrics },
      {
        watchlists: {
          owns: async (_caller, watchlistId) =>
            watchlistId !== FOREIGN_WATCHLIST && !DELETED_WATCHLISTS.has(watchlistId),
        },
        ...(overrides.loadUsage || !hasLedger
          ? { loadUsage: overrides.loadUsage ?? (async () => ({ used: 0, foliosToday: [] })) }
          : {}),
        ...(overrides.helpOthers === undefined ? {} : { helpOthers: overrides.helpOthers }),
      },
    );
    await app.start();
    instances.push(app);
    return app;
  }

  return {
    instances,
    startDispatcher,
    /** Prometheus text of a dispatcher instance's registry, as its /metrics serves it. */
    async metricsText(instance = 0): Promise<string> {
      return (await registries[instance]?.registry.metrics()) ?? "";
    },
    async stopDispatcher(app: Dispatcher) {
      const index = instances.indexOf(app);
      await app.stop();
      await app.http?.close();
      if (index >= 0) {
        instances.splice(index, 1);
        await buses[index]?.close();
        await pools[index]?.end();
        buses.splice(index, 1);
        pools.splice(index, 1);
      }
    },
    async close() {
      for (const app of instances) {
        await app.stop().catch(() => {});
        await app.http?.close().catch(() => {});
      }
      await Promise.allSettled(buses.map((bus) => bus.close()));
      await Promise.allSettled(pools.map((pool) => pool.end()));
    },
  };
}

const TIER_DEFAULTS = {
  starter: { lead_views_per_month: 500, concurrent_webhooks: 0 },
  operator: { lead_views_per_month: 2000, concurrent_webhooks: 5 },
  team: { lead_views_per_month: 5000, concurrent_webhooks: 10 },
  custom: { lead_views_per_month: 10000, concurrent_webhooks: 20 },
};

/** Publishes tenants with rising revisions, and waits for the dispatcher to apply one. */
function tenantPublisher(harness: Harness) {
  const revisions = new Map<string, number>();
  return {
    async publishTenant(
      tenantId: string,
      tier: Tier,
      limits: Partial<TenantChanged["limits"]> = {},
      extra: Partial<TenantChanged> = {},
    ) {
      const revision = (revisions.get(tenantId) ?? 0) + 1;
      revisions.set(tenantId, revision);
      const event: TenantChanged = {
        tenant_id: tenantId,
        revision,
        tier,
        status: "active",
        limits: { rate_per_minute: 600, seats: 1, ...TIER_DEFAULTS[tier], ...limits },
        billing_anniversary: new Date().toISOString().slice(0, 10),
        trial_ends_at: null,
        changed_at: new Date().toISOString(),
        ...extra,
      };
      await harness.bus.publish(contracts.tenantChanged, event);
      return event;
    },
    /** Waits until the dispatcher's projection has the tenant at this revision. */
    async tenantApplied(tenantId: string) {
      const revision = revisions.get(tenantId) ?? 0;
      await waitFor(
        async () =>
          (
            await harness.db.pool.query(
              "SELECT 1 FROM dispatcher.tenants WHERE tenant_id = $1 AND revision >= $2",
              [tenantId, revision],
            )
          ).rowCount,
        { what: `tenant ${tenantId} revision ${revision}` },
      );
    },
  };
}

/** Dispatchers in child processes (same database, Redis prefix and broker), killed at close. */
function childDispatchers(harness: Harness, ledgerUrl: string | undefined) {
  const children: ChildProcess[] = [];
  return {
    async spawnDispatcher(env: Record<string, string> = {}): Promise<ChildProcess> {
      const child = spawn(
        process.execPath,
        [join(import.meta.dirname, "webhook-dispatcher-child.ts")],
        {
          env: {
            ...process.env,
            ...TEST_DISPATCHER_ENV,
            ...(ledgerUrl ? { LEDGER_URL: ledgerUrl, TEST_LEDGER_SEEDS: "1" } : {}),
            ...env,
            DATABASE_URL: harness.db.url,
            REDIS_URL: harness.config.REDIS_URL,
            REDIS_PREFIX: harness.redis.options.keyPrefix ?? "",
            KAFKA_BROKERS: harness.brokers.join(","),
            NODE_ENV: "test",
          },
          stdio: ["ignore", "pipe", "inherit"],
        },
      );
      children.push(child);
      await new Promise<void>((resolve, reject) => {
        child.stdout?.on("data", (chunk: Buffer) => {
          if (chunk.toString().includes("ready")) {
            resolve();
          }
        });
        child.on("exit", (code) => reject(new Error(`dispatcher child exited with ${code}`)));
      });
      return child;
    },
    kill() {
      for (const child of children) {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill("SIGKILL");
        }
      }
    },
  };
}

/** A match of `tenantId` on `watchlistId`, with a fresh id unless the overrides name one. */
function testMatch(
  tenantId: string,
  watchlistId: string,
  overrides: Partial<MatchFound> = {},
): MatchFound {
  const id = overrides.match_id ?? `m_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
  return {
    ...sampleMatch,
    match_id: id,
    tenant_id: tenantId,
    watchlist: { id: watchlistId, name: "Test watchlist" },
    match: { ...sampleMatch.match, folio: `23-${id}` },
    occurred_at: new Date().toISOString(),
    ...overrides,
  } satisfies MatchFound;
}

function headersFor(tenantId: string) {
  return {
    [INTERNAL_HEADERS.tenant]: tenantId,
    [INTERNAL_HEADERS.member]: "mb_test",
    [INTERNAL_HEADERS.key]: "key_test",
  };
}

/** The first dispatcher instance's internal API, called as a tenant. */
function internalApi(instances: readonly Dispatcher[]) {
  async function call(
    tenantId: string,
    method: "GET" | "POST" | "DELETE",
    path: string,
    payload?: unknown,
  ) {
    const app = instances[0];
    if (!app?.http) {
      throw new Error("start a dispatcher first");
    }
    const response = await app.http.inject(
      signedInject(app.http, "webhook-dispatcher", {
        method,
        url: `/internal/v1${path}`,
        headers: headersFor(tenantId),
        ...(payload !== undefined ? { body: payload } : {}),
      }),
    );
    return { status: response.statusCode, body: response.body ? response.json() : undefined };
  }

  async function subscribe(tenantId: string, watchlistId: string, url: string) {
    const reply = await call(tenantId, "POST", `/watchlists/${watchlistId}/webhooks`, {
      url,
      events: ["watchlist.match"],
    });
    if (reply.status !== 201) {
      throw new Error(`subscribe failed: ${reply.status} ${JSON.stringify(reply.body)}`);
    }
    return reply.body as { id: string; url: string; events: string[]; secret: string };
  }

  return { call, subscribe, headersFor };
}

/**
 * `ledger`: also runs the quota ledger on `leadview.recorded`, and dispatchers seed their
 * lead-view counters from it (over its internal API) unless a test passes its own loader.
 * `brokers` puts the stack on a broker the test runs (say one it kills), `env` on other stores
 * (say a private REDIS_URL).
 */
export async function startWebhookStack(
  options: { ledger?: boolean; brokers?: string[]; env?: Record<string, string> } = {},
) {
  const base = readConfig({ ...TEST_DISPATCHER_ENV, ...options.env });
  const harness = await createTestHarness({
    config: base,
    migrations: options.ledger ? [migrations, ledgerMigrations] : [migrations],
    topics: options.ledger ? [...DISPATCHER_TOPICS, contracts.leadViewVoided] : DISPATCHER_TOPICS,
    ...(options.brokers ? { brokers: options.brokers } : {}),
  });
  const ledger = options.ledger ? await startLedger(harness) : undefined;
  const fleet = dispatcherFleet(harness, ledger?.url, ledger !== undefined);
  const children = childDispatchers(harness, ledger?.url);

  return {
    harness,
    /** The quota ledger's internal API, when the stack runs one. */
    ledgerUrl: ledger?.url,
    pool: harness.db.pool,
    metricsText: fleet.metricsText,
    startDispatcher: fleet.startDispatcher,
    spawnDispatcher: children.spawnDispatcher,
    instances: fleet.instances,
    ...tenantPublisher(harness),
    match: testMatch,
    async publishMatches(matches: MatchFound[]) {
      for (let i = 0; i < matches.length; i += 500) {
        await harness.bus.publish(contracts.matchFound, matches.slice(i, i + 500));
      }
    },
    ...internalApi(fleet.instances),
    async deliveryOf(webhookId: string) {
      const { rows } = await harness.db.pool.query(
        "SELECT * FROM dispatcher.deliveries WHERE id = $1",
        [webhookId],
      );
      return rows[0];
    },
    stopDispatcher: fleet.stopDispatcher,
    async close() {
      children.kill();
      await fleet.close();
      await ledger?.ledger.stop().catch(() => {});
      await ledger?.ledger.http?.close().catch(() => {});
      await harness.close();
    },
  };
}

export type WebhookStack = Awaited<ReturnType<typeof startWebhookStack>>;

/** How a child process ended, once it has: undefined while it runs. */
export function exitOf(child: ChildProcess): () => string | undefined {
  let exited: string | undefined;
  child.on("exit", (code, signal) => {
    exited = `code ${code} signal ${signal}`;
  });
  return () => exited;
}

/**
 * A Custom tenant with room for any burst, subscribed to `watchlistId` at `url`. An in-process
 * dispatcher applies the tenant and is stopped again, so only the processes a test spawns deliver.
 */
export async function subscribedTenant(
  stack: WebhookStack,
  tenantId: string,
  watchlistId: string,
  url: string,
): Promise<void> {
  await stack.publishTenant(tenantId, "custom", {
    concurrent_webhooks: 16,
    lead_views_per_month: 100_000,
  });
  const api = await stack.startDispatcher();
  await stack.tenantApplied(tenantId);
  await stack.subscribe(tenantId, watchlistId, url);
  await stack.stopDispatcher(api);
}

/**
 * Waits until the receiver got every delivery of `tenant` (or `died()` says the dispatcher under
 * test exited), then tallies what a fault test reports: delivery rows, the ids received, rows
 * never received and sends of an id already received.
 */
export async function tallyDeliveries(
  stack: WebhookStack,
  receiver: Receiver,
  tenant: string,
  expected: number,
  died: () => string | undefined,
) {
  const unique = () => new Set(receiver.received.map((r) => r.webhookId));
  await waitFor(() => died() ?? unique().size >= expected, {
    timeoutMs: 40_000,
    what: "every webhook id",
  });
  const { rows } = await stack.pool.query<{ id: string }>(
    "SELECT id FROM dispatcher.deliveries WHERE tenant_id = $1",
    [tenant],
  );
  const ids = unique();
  const missing = rows.filter((row) => !ids.has(row.id)).length;
  return {
    rows: rows.length,
    received: ids.size,
    missing,
    duplicates: receiver.received.length - ids.size,
    lost: missing + Math.max(0, expected - rows.length),
  };
}
