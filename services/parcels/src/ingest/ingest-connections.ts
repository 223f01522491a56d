import { Bus } from "@th/bus";
import { kafkaConnection } from "@th/config";
import { contracts } from "@th/contracts";
import { createPool, type Pool } from "@th/db";
import type { Logger } from "@th/telemetry";
import type { Config } from "../config.ts";
import { migrations } from "../db/migrations.ts";
import type { Publish } from "./ingest-file.ts";

export interface IngestConnections {
  pool: Pool;
  bus: Bus;
  publish: Publish;
  close(): Promise<void>;
}

/**
 * The store and the broker an ingest writes to, opened one way for the command and for each of
 * its worker threads, so both connect with the same settings.
 */
export async function openIngestConnections(
  config: Config,
  logger: Logger,
  clientId: string,
): Promise<IngestConnections> {
  // The ingest lock, the store, two lookups and the watermark, none waiting for another.
  const pool = createPool({ url: config.DATABASE_URL, schema: migrations.schema, max: 5 });
  const bus = new Bus({ ...kafkaConnection(config), clientId, logger });
  try {
    // The topic plan creates topics (`npm run topics`); an ingest only checks.
    await bus.requireTopics([contracts.parcelIngested]);
  } catch (error) {
    await bus.close();
    await pool.end();
    throw error;
  }
  return {
    pool,
    bus,
    publish: (records) => bus.publishEncoded(records),
    async close() {
      await bus.close();
      await pool.end();
    },
  };
}
