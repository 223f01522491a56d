import type { RunningConsumer } from "@th/bus";
import {
  createHttpApp,
  createMetrics,
  createOutboxRelay,
  createRetention,
  type Retention,
  requireSignedCalls,
  type ServiceApp,
  type ServiceDeps,
} from "@th/service-kit";
import { type Config, INTERNAL_RECEIVER } from "./config.ts";
import { consumeParcelsForMatching, type MatchCounters } from "./consumers/match.ts";
import { consumeParcelsForProjection } from "./consumers/projection.ts";
import { snapshotBounds } from "./db/poll-horizon.ts";
import { manualRunsRule, matchesRule } from "./db/retention.ts";
import { createWatchlistStore } from "./db/watchlists.ts";
import { PollHorizon } from "./domain/poll-horizon.ts";
import { createManualRuns } from "./matching/manual-runs.ts";
import { WatchlistCache } from "./matching/watchlist-cache.ts";
import { registerWatchlistRoutes } from "./routes/watchlists.ts";

const FLUSH_DELAY_MS = 20;
const RELAY_BATCH_SIZE = 2000;

export interface MatcherOptions {
  /** Leave out the parcel projection consumer (benchmarks of matching alone). */
  projection?: boolean;
  /** The clock matches and runs are stamped and aged by (a compressed one in the soak bench). */
  now?: () => Date;
}

const DAY_MS = 86_400_000;

export type MatcherApp = ServiceApp & {
  cache: WatchlistCache;
  counters: () => MatchCounters;
  runs: ReturnType<typeof createManualRuns>;
  retention: Retention;
  flushOutbox: () => Promise<number>;
};

/** Matches and manual runs age out (decision 0394). */
function createMatcherRetention(deps: ServiceDeps<Config>, now: () => Date): Retention {
  const { config } = deps;
  return createRetention({
    pool: deps.pool,
    logger: deps.logger,
    metrics: deps.metrics ?? createMetrics("matcher"),
    rules: [
      matchesRule(config.MATCH_RETENTION_DAYS * DAY_MS),
      manualRunsRule(config.MANUAL_RUN_RETENTION_DAYS * DAY_MS),
    ],
    intervalMs: config.RETENTION_INTERVAL_MS,
    batchSize: config.RETENTION_BATCH_SIZE,
    now,
  });
}

/**
 * How long the oldest writing transaction of the Postgres instance has held back what polls
 * return (decision 0397), read at each scrape; a failed read leaves the last value.
 */
function exportPollHorizon(deps: ServiceDeps<Config>): void {
  const horizon = new PollHorizon();
  deps.metrics?.gauge(
    "th_match_poll_held_back_seconds",
    "How long the oldest writing transaction on the Postgres instance has held back the matches polls return",
    [] as const,
    async (gauge) => {
      try {
        gauge.set(horizon.observe(await snapshotBounds(deps.pool), Date.now()));
      } catch (error) {
        deps.logger.warn({ err: error }, "could not read the poll horizon");
      }
    },
  );
}

/** Builds the service without listening or consuming; `start` begins consuming. */
export async function buildApp(
  deps: ServiceDeps<Config>,
  options: MatcherOptions = {},
): Promise<MatcherApp> {
  const { config, logger, pool, bus } = deps;
  const http = await createHttpApp({
    logger,
    title: "Terminal House matcher (internal)",
    description: "Watchlists, manual runs and match polling; called by the gateway only.",
  });
  requireSignedCalls(http, {
    service: INTERNAL_RECEIVER.service,
    callerKeys: config.INTERNAL_CALLER_KEYS,
  });

  // A batch of parcels can bring thousands of matches; each relay round is a select, one
  // produce request and an update, so larger rounds mean fewer of them.
  const relay = createOutboxRelay({ pool, bus, logger, batchSize: RELAY_BATCH_SIZE });
  // After a commit with matches, publish within FLUSH_DELAY_MS rather than at the relay's next
  // tick; commits in that window share one relay round instead of one each.
  let flushTimer: NodeJS.Timeout | undefined;
  const flushSoon = () => {
    flushTimer ??= setTimeout(() => {
      flushTimer = undefined;
      relay.flush().catch((error: unknown) => logger.warn({ err: error }, "outbox flush failed"));
    }, FLUSH_DELAY_MS);
  };
  const watchlists = createWatchlistStore(pool, {
    maxPerTenant: config.MAX_WATCHLISTS_PER_TENANT,
  });
  const now = options.now ?? (() => new Date());
  const runs = createManualRuns({
    pool,
    logger,
    now,
    watchlists,
    parcelLimit: config.MANUAL_RUN_MAX_PARCELS,
    maxRunsPerTenant: config.MANUAL_RUNS_PER_TENANT,
    onCommitted: flushSoon,
  });
  const cache = new WatchlistCache({ pool, logger, pollIntervalMs: config.WATCHLIST_POLL_MS });
  const retention = createMatcherRetention(deps, now);
  exportPollHorizon(deps);
  registerWatchlistRoutes(http, {
    pool,
    watchlists,
    runs,
    matchRetention: { keepMs: config.MATCH_RETENTION_DAYS * DAY_MS, now },
  });
  http.get("/internal/v1/openapi.json", { schema: { hide: true } }, async () => http.swagger());

  const consumers: RunningConsumer[] = [];
  let counters: MatchCounters = { parcels: 0, matches: 0, parked: 0 };
  return {
    http,
    cache,
    runs,
    retention,
    counters: () => counters,
    flushOutbox: () => relay.flush(),
    async start() {
      await cache.start();
      relay.start();
      retention.start();
      const matching = await consumeParcelsForMatching({
        bus,
        pool,
        logger,
        cache,
        now,
        onCommitted: flushSoon,
        partitionsConsumedConcurrently: config.MATCH_PARTITIONS_CONCURRENTLY,
      });
      counters = matching.counters;
      consumers.push(matching);
      if (options.projection !== false) {
        consumers.push(
          await consumeParcelsForProjection({
            bus,
            pool,
            partitionsConsumedConcurrently: config.PROJECTION_PARTITIONS_CONCURRENTLY,
          }),
        );
      }
    },
    async stop() {
      await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
      await runs.settle();
      await retention.stop();
      clearTimeout(flushTimer);
      await relay.stop();
      await relay.flush().catch(() => 0);
      await cache.stop();
    },
  };
}
