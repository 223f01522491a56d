import { contracts } from "@th/contracts";
import { createHttpApp, type ServiceApp, type ServiceDeps } from "@th/service-kit";
import type { Config } from "./config.ts";
import { ensureSecondaryIndexes, publishPending, tryWithIngestLock } from "./db/parcel-store.ts";
import { registerParcelRoutes } from "./routes/parcels.ts";

/** Builds the service without starting it, so tests can drive it directly. */
export async function buildApp(deps: ServiceDeps<Config>): Promise<ServiceApp> {
  const http = await createHttpApp({
    logger: deps.logger,
    title: "Terminal House parcels (internal)",
    description: "The parcel store behind lead reads; called by the gateway only.",
  });
  registerParcelRoutes(http, { pool: deps.pool, internalToken: deps.config.INTERNAL_TOKEN });
  http.get("/internal/v1/openapi.json", { schema: { hide: true } }, async () => http.swagger());
  return {
    http,
    start: async () => {
      // An ingest that died during a first load left the store without its secondary indexes,
      // and one that stored changes and died before publishing them left them above the
      // watermark: build and send them now. A running ingest holds the lock and does both itself.
      const outcome = await tryWithIngestLock(deps.pool, async () => {
        await ensureSecondaryIndexes(deps.pool);
        return publishPending(deps.pool, (events) =>
          deps.bus.publish(contracts.parcelIngested, events),
        );
      });
      if (outcome && outcome.value > 0) {
        deps.logger.info(
          { published: outcome.value },
          "published parcels left by an interrupted ingest",
        );
      }
    },
    stop: async () => {},
  };
}
