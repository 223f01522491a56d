import {
  createHttpApp,
  createMetrics,
  createRetention,
  type Retention,
  requireSignedCalls,
  type ServiceApp,
  type ServiceDeps,
} from "@th/service-kit";
import { type Config, INTERNAL_RECEIVER } from "./config.ts";
import { ingestRunsRule } from "./db/ingest-runs.ts";
import { ensureSecondaryIndexes, publishPending, tryWithIngestLock } from "./db/parcel-store.ts";
import { registerOperatorRoutes } from "./routes/operator.ts";
import { registerParcelRoutes } from "./routes/parcels.ts";

const DAY_MS = 86_400_000;

/** Builds the service without starting it, so tests can drive it directly. */
export async function buildApp(
  deps: ServiceDeps<Config>,
  options: { now?: () => Date } = {},
): Promise<ServiceApp & { recovery(): Promise<void>; retention: Retention }> {
  const http = await createHttpApp({
    logger: deps.logger,
    title: "Terminal House parcels (internal)",
    description: "The parcel store behind lead reads; called by the gateway only.",
  });
  requireSignedCalls(http, {
    service: INTERNAL_RECEIVER.service,
    callerKeys: deps.config.INTERNAL_CALLER_KEYS,
  });
  registerParcelRoutes(http, { pool: deps.pool });
  registerOperatorRoutes(http, { pool: deps.pool });
  http.get("/internal/v1/openapi.json", { schema: { hide: true } }, async () => http.swagger());
  let recovery: Promise<void> = Promise.resolve();
  const retention = createRetention({
    pool: deps.pool,
    logger: deps.logger,
    metrics: deps.metrics ?? createMetrics("parcels"),
    rules: [ingestRunsRule(deps.config.INGEST_RUN_RETENTION_DAYS * DAY_MS)],
    intervalMs: deps.config.RETENTION_INTERVAL_MS,
    batchSize: deps.config.RETENTION_BATCH_SIZE,
    ...(options.now ? { now: options.now } : {}),
  });

  // An ingest that died during a first load left the store without its secondary indexes, and
  // one that stored changes and died before publishing them left them above the watermark: build
  // and send them now. A running ingest holds the lock and does both itself.
  async function recover(): Promise<void> {
    const outcome = await tryWithIngestLock(deps.pool, async () => {
      const built = await ensureSecondaryIndexes(deps.pool);
      if (built > 0) {
        deps.logger.info({ indexes: built }, "built the indexes an interrupted first load left");
      }
      return publishPending(deps.pool, (records) => deps.bus.publishEncoded(records));
    });
    if (outcome && outcome.value > 0) {
      deps.logger.info(
        { published: outcome.value },
        "published parcels left by an interrupted ingest",
      );
    }
  }

  return {
    http,
    retention,
    start: async () => {
      retention.start();
      // In the background: building the indexes of a statewide store takes minutes, longer than
      // a start-up probe waits, and the service serves reads meanwhile (slower, never wrong).
      recovery = recover().catch((error: unknown) => {
        deps.logger.error(
          { err: error },
          "recovery of an interrupted ingest failed; next start retries",
        );
      });
    },
    stop: () => retention.stop(),
    /** Settles when the start-up recovery has finished (or failed and been logged). */
    recovery: () => recovery,
  };
}
