import { randomUUID } from "node:crypto";
import { Bus, type RunningConsumer } from "@th/bus";
import { kafkaConnection } from "@th/config";
import { contracts, deliveryRetryLadder } from "@th/contracts";
import { createLeadViewMeter, ledgerUsageLoader, type UsageLoader } from "@th/quota";
import {
  createHttpApp,
  createMetrics,
  createOutboxRelay,
  createRetention,
  requireSignedCalls,
  type ServiceApp,
  type ServiceDeps,
  unavailableStore,
} from "@th/service-kit";
import { internalGetter, matcherWatchlists, type WatchlistDirectory } from "./clients/internal.ts";
import { type Config, INTERNAL_RECEIVER } from "./config.ts";
import { matchSubscriptions, retrySubscriptions, tenantSubscriptions } from "./consumers/index.ts";
import { countWaiting } from "./db/deliveries.ts";
import { ensureDeliveryMonths } from "./db/partitions.ts";
import { dispatcherRetention } from "./db/retention.ts";
import { createTenantSlots } from "./delivery/concurrency.ts";
import { createMembership } from "./delivery/membership.ts";
import { createSecretStore } from "./delivery/secret-store.ts";
import { createSender } from "./delivery/sender.ts";
import { createWorker } from "./delivery/worker.ts";
import type { EndpointLimits } from "./domain/endpoints.ts";
import { createSecretBox } from "./domain/secrets.ts";
import { createEndpointService } from "./endpoints/service.ts";
import { registerWebhookRoutes } from "./routes/webhooks.ts";

/**
 * The topics the dispatcher reads or writes, which must exist before it starts; tests and
 * benchmarks that run it create these.
 */
export const DISPATCHER_TOPICS = [
  contracts.matchFound,
  contracts.deliveryAttempted,
  ...deliveryRetryLadder.map((stage) => stage.contract),
  contracts.deliveryDeadLetter,
  contracts.leadViewRecorded,
  contracts.tenantChanged,
  contracts.keyRevoked,
];

export interface DispatcherOptions {
  /** Who owns a watchlist; the matcher's internal API unless a test passes its own. */
  watchlists?: WatchlistDirectory;
  /** Seeds lead-view counters; the quota ledger's internal API unless a test passes its own. */
  loadUsage?: UsageLoader;
  now?: () => number;
  /** Whether an idle instance helps with the other members' tenants (yes, unless a bench's control). */
  helpOthers?: boolean;
}

/** How many endpoints a watchlist and a tenant may have (decision 0332). */
function endpointLimits(config: Config): EndpointLimits {
  return {
    perWatchlist: config.MAX_ENDPOINTS_PER_WATCHLIST,
    perTenant: config.MAX_ENDPOINTS_PER_TENANT,
  };
}

/** The dispatcher's own instruments: attempts by outcome and their latency, waiting deliveries. */
function deliveryInstruments(deps: ServiceDeps<Config>) {
  const { metrics, pool } = deps;
  const attemptsByOutcome = metrics?.counter(
    "th_delivery_attempts_total",
    "Delivery attempts by outcome (complete, retrying, exhausted, dead_letter) and attempt number",
    ["outcome", "attempt"] as const,
  );
  const attemptSeconds = metrics?.histogram(
    "th_delivery_attempt_duration_seconds",
    "How long receivers took to answer (or fail) a delivery attempt, by outcome",
    ["outcome"] as const,
    [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  );
  metrics?.gauge(
    "th_deliveries_waiting",
    "Deliveries held in the dead-letter store (30 days) or parked for quota or tier",
    ["state"] as const,
    async (gauge) => {
      for (const row of await countWaiting(pool)) {
        gauge.set({ state: row.state }, row.n);
      }
    },
  );
  return { attemptsByOutcome, attemptSeconds };
}

/** Retention of deliveries and attempts, by month (decision 0392). */
function createDispatcherRetention(deps: ServiceDeps<Config>, now: () => number) {
  return createRetention({
    pool: deps.pool,
    rules: dispatcherRetention,
    metrics: deps.metrics ?? createMetrics("webhook-dispatcher"),
    logger: deps.logger,
    intervalMs: deps.config.RETENTION_INTERVAL_MS,
    batchSize: deps.config.RETENTION_BATCH_SIZE,
    now: () => new Date(now()),
  });
}

/** Builds the dispatcher without starting it, so tests can drive it directly. */
export async function buildApp(deps: ServiceDeps<Config>, options: DispatcherOptions = {}) {
  const { config, pool, logger } = deps;
  const now = options.now ?? (() => Date.now());
  const signedAs = (receiver: string) => ({
    signing: { caller: INTERNAL_RECEIVER.service, root: config.INTERNAL_SIGNING_SECRET, receiver },
    timeoutMs: config.UPSTREAM_TIMEOUT_MS,
  });
  const policy = { allowLoopback: config.WEBHOOK_ALLOW_LOOPBACK_HTTP };
  const http = await createHttpApp({ logger, title: "webhook-dispatcher internal API" });
  requireSignedCalls(http, {
    service: INTERNAL_RECEIVER.service,
    callerKeys: config.INTERNAL_CALLER_KEYS,
  });
  const relay = createOutboxRelay({ pool, bus: deps.bus, logger, intervalMs: 200 });
  const secrets = createSecretStore({
    pool,
    box: createSecretBox(config.SECRET_KEYS),
    now,
  });
  const sender = createSender({
    policy,
    timeoutMs: config.DELIVERY_TIMEOUT_MS,
    maxSockets: config.MAX_IN_FLIGHT,
  });
  const { attemptsByOutcome, attemptSeconds } = deliveryInstruments(deps);
  const retention = createDispatcherRetention(deps, now);
  // The worker's Redis calls (tenant slots, lead-view reservations, slot releases) for a whole
  // claimed batch are issued in the same turn; auto-pipelining sends them in one write.
  const workerRedis = deps.redis.duplicate({ enableAutoPipelining: true });
  workerRedis.on("error", (error) => logger.warn({ err: error }, "redis connection error"));
  const slots = createTenantSlots(workerRedis, { leaseMs: config.SLOT_LEASE_MS });
  const membership = createMembership(workerRedis, {
    instanceId: randomUUID(),
    beatMs: Math.max(50, Math.floor(config.SLOT_LEASE_MS / 3)),
    ttlMs: config.SLOT_LEASE_MS,
  });
  const worker = createWorker({
    share: () => membership.share(),
    helpOthers: options.helpOthers,
    onAttempt: (outcome, attempt, durationMs) => {
      attemptsByOutcome?.inc({ outcome, attempt: String(attempt) });
      attemptSeconds?.observe({ outcome }, durationMs / 1000);
    },
    pool,
    logger,
    sender,
    slots,
    secrets,
    meter: createLeadViewMeter(workerRedis, {
      loadUsage:
        options.loadUsage ??
        ledgerUsageLoader({
          get: internalGetter({ ...signedAs("quota-ledger"), baseUrl: config.LEDGER_URL }),
          unavailable: (detail) => new Error(detail),
        }),
    }),
    relay,
    leaseMs: config.LEASE_MS,
    pollMs: config.POLL_MS,
    maxInFlight: config.MAX_IN_FLIGHT,
    retrySweepGraceMs: config.RETRY_SWEEP_GRACE_MS,
    longDelayScale: config.LONG_DELAY_SCALE,
    defaultConcurrency: config.DEFAULT_CONCURRENT_WEBHOOKS,
    now,
  });
  const endpoints = createEndpointService({
    pool,
    secrets,
    watchlists:
      options.watchlists ??
      matcherWatchlists({ ...signedAs("matcher"), baseUrl: config.MATCHER_URL }),
    policy,
    limits: endpointLimits(config),
    now,
    wake: () => worker.wake(),
  });
  registerWebhookRoutes(http, endpoints);

  // Retry records are held until shortly before they are due; a short fetch wait keeps the
  // hand-off prompt when a paused partition resumes.
  const retryBus = new Bus({
    ...kafkaConnection(config),
    clientId: "webhook-dispatcher-retries",
    logger,
    isUnavailable: (error) => unavailableStore(error) !== undefined,
    consumerTimings: { maxWaitTimeInMs: 100 },
  });
  const consumers: RunningConsumer[] = [];
  const app: ServiceApp & {
    worker: typeof worker;
    endpoints: typeof endpoints;
    retention: typeof retention;
  } = {
    http,
    worker,
    endpoints,
    retention,
    async start() {
      // The current month's partitions before any intake; a failure is retried by each round.
      await ensureDeliveryMonths(pool, new Date(now())).catch((error: unknown) =>
        logger.warn({ err: error }, "creating the coming months' partitions failed; will retry"),
      );
      retention.start();
      relay.start();
      await membership.start();
      worker.start();
      consumers.push(
        await deps.bus.consume({
          group: "webhook-dispatcher.matches",
          subscriptions: matchSubscriptions({ pool, worker, now }),
          partitionsConsumedConcurrently: 12,
        }),
        await retryBus.consume({
          group: "webhook-dispatcher.retries",
          subscriptions: retrySubscriptions({ pool, worker, now }),
          partitionsConsumedConcurrently: 48,
        }),
        await deps.bus.consume({
          group: "webhook-dispatcher.tenants",
          subscriptions: tenantSubscriptions({ pool, worker, endpoints, logger }),
          partitionsConsumedConcurrently: 4,
        }),
      );
    },
    async stop() {
      await Promise.allSettled(consumers.map((consumer) => consumer.stop()));
      consumers.length = 0;
      // Leaving first: the others take this instance's tenants over while it drains.
      await membership.stop();
      await worker.stop();
      slots.close();
      await retention.stop();
      await relay.stop();
      await relay.flush().catch(() => {});
      await retryBus.close();
      sender.close();
      workerRedis.disconnect();
    },
  };
  return app;
}
