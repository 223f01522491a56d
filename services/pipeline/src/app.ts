import { PIPELINE_MAX_STAGES } from "@th/api-schemas";
import {
  createHttpApp,
  createOutboxRelay,
  requireSignedCalls,
  type ServiceApp,
  type ServiceDeps,
} from "@th/service-kit";
import { type Config, INTERNAL_RECEIVER } from "./config.ts";
import { createItemReads } from "./db/item-reads.ts";
import { createItemStore } from "./db/items.ts";
import { createStageStore } from "./db/stages.ts";
import { registerItemRoutes } from "./routes/items.ts";
import { registerStageRoutes } from "./routes/stages.ts";

export type PipelineApp = ServiceApp & { flushOutbox: () => Promise<number> };

/**
 * Builds the service without listening; `start` begins relaying its events. It consumes no
 * topic: its state is written by its own API, each change with its events in one transaction.
 */
export async function buildApp(deps: ServiceDeps<Config>): Promise<PipelineApp> {
  const { config, logger, pool, bus } = deps;
  const http = await createHttpApp({
    logger,
    title: "Terminal House pipeline (internal)",
    description: "Stages and items of each tenant's pipeline; called by the gateway only.",
  });
  requireSignedCalls(http, {
    service: INTERNAL_RECEIVER.service,
    callerKeys: config.INTERNAL_CALLER_KEYS,
  });
  const relay = createOutboxRelay({ pool, bus, logger });
  registerStageRoutes(http, createStageStore(pool, { maxStages: PIPELINE_MAX_STAGES }));
  registerItemRoutes(http, {
    items: createItemStore(pool, {
      maxItems: config.MAX_ITEMS_PER_TENANT,
      maxNotes: config.MAX_NOTES_PER_ITEM,
    }),
    reads: createItemReads(pool),
  });
  http.get("/internal/v1/openapi.json", { schema: { hide: true } }, async () => http.swagger());
  return {
    http,
    flushOutbox: () => relay.flush(),
    async start() {
      relay.start();
    },
    async stop() {
      await relay.stop();
      await relay.flush().catch(() => 0);
    },
  };
}
