import { DEV_SECRETS, defineConfig, serviceShape, vars } from "@th/config";

/** The token internal callers present in development; production must set its own. */
export const DEV_INTERNAL_TOKEN = DEV_SECRETS.INTERNAL_TOKEN;

export const configSchema = defineConfig(
  {
    ...serviceShape({ port: 8083, internalPort: 9083 }),
    /** Rows per store-and-publish batch of an ingest. */
    INGEST_BATCH_SIZE: vars.positiveInt(2000),
  },
  { devDefaults: DEV_SECRETS },
);

export type Config = ReturnType<typeof configSchema.load>;

/** The only read of the environment in this service. */
export const readConfig = configSchema.load;
