import { DEV_SECRETS, defineConfig, receiverDevDefaults, serviceShape, vars } from "@th/config";

/** This service's name on the internal API and the callers it accepts (decision 0320). */
export const INTERNAL_RECEIVER = { service: "parcels", callers: ["gateway"] } as const;

export const configSchema = defineConfig(
  {
    ...serviceShape({ port: 8083, internalPort: 9083, ...INTERNAL_RECEIVER }),
    /** Rows per store-and-publish batch of an ingest. */
    INGEST_BATCH_SIZE: vars.positiveInt(2000),
    /** Days an ingest run's record is kept (decision 0394). */
    INGEST_RUN_RETENTION_DAYS: vars.positiveInt(90),
    /** How often retention removes what has aged out. */
    RETENTION_INTERVAL_MS: vars.positiveInt(60_000),
    /** Most rows one retention statement removes, so none holds its locks long. */
    RETENTION_BATCH_SIZE: vars.positiveInt(1_000),
  },
  { devDefaults: { ...DEV_SECRETS, ...receiverDevDefaults(INTERNAL_RECEIVER) } },
);

export type Config = ReturnType<typeof configSchema.load>;

/** The only read of the environment in this service. */
export const readConfig = configSchema.load;
