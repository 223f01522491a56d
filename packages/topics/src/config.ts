import { commonShape, defineConfig, z } from "@th/config";
import { PRODUCTION_REPLICATION } from "@th/contracts";

const count = (fallback: number) => z.coerce.number().int().positive().default(fallback);

/** The shared settings (the Kafka connection among them) and the replication to plan for. */
const configSchema = defineConfig({
  ...commonShape,
  /** Copies of each partition; 1 on a one-broker cluster (the dev broker, a test container). */
  TOPICS_REPLICATION_FACTOR: count(PRODUCTION_REPLICATION.replicationFactor),
  /** Copies a write must reach; at most the replication factor. */
  TOPICS_MIN_INSYNC_REPLICAS: count(PRODUCTION_REPLICATION.minInsyncReplicas),
});

export type Config = ReturnType<typeof configSchema.load>;

/** The only read of the environment in this command. */
export const readConfig = configSchema.load;
