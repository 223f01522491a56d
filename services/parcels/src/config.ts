import { commonShape, DEV_SECRETS, defineConfig, vars } from "@th/config";

/** The token internal callers present in development; production must set its own. */
export const DEV_INTERNAL_TOKEN = DEV_SECRETS.INTERNAL_TOKEN;

export const configSchema = defineConfig(
  {
    ...commonShape,
    PORT: vars.port(8083),
    INTERNAL_PORT: vars.port(9083),
    HOST: vars.host(),
    INTERNAL_TOKEN: vars.internalToken(),
    /** Rows per store-and-publish batch of an ingest. */
    INGEST_BATCH_SIZE: vars.positiveInt(2000),
  },
  { devDefaults: DEV_SECRETS },
);

export type Config = ReturnType<typeof configSchema.load>;

/** The only read of the environment in this service. */
export const readConfig = configSchema.load;
