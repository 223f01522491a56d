import {
  createHttpApp,
  requireSignedCalls,
  type ServiceApp,
  type ServiceDeps,
} from "@th/service-kit";
import { type Config, INTERNAL_RECEIVER } from "./config.ts";
import { ensureSecondaryIndexes, publishPending, tryWithIngestLock } from "./db/parcel-store.ts";
import { registerParcelRoutes } from "./routes/parcels.ts";

/** Builds the service without starting it, so tests can drive it directly. */
export async function buildApp(
  deps: ServiceDeps<Config>,
): Promise<ServiceApp & { recovery(): Promise<void> }> {
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
  http.get("/internal/v1/openapi.json", { schema: { hide: true } }, async () => http.swagger());
  let recovery: Promise<void> = Promise.resolve();

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
    start: async () => {
      // In the background: building the indexes of a statewide store takes minutes, longer than
      // a start-up probe waits, and the service serves reads meanwhile (slower, never wrong).
      recovery = recover().catch((error: unknown) => {
        deps.logger.error(
          { err: error },
          "recovery of an interrupted ingest failed; next start retries",
        );
      });
    },
    stop: async () => {},
    /** Settles when the start-up recovery has finished (or failed and been logged). */
    recovery: () => recovery,
  };
}
