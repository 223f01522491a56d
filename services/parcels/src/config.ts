import {
  commonShape,
  DEV_SECRETS,
  defineConfig,
  refuseDevDefaultsInProduction,
  vars,
  z,
} from "@th/config";

/** The token internal callers present in development; production must set its own. */
export const DEV_INTERNAL_TOKEN = DEV_SECRETS.INTERNAL_TOKEN;

export const configSchema = defineConfig({
  ...commonShape,
  PORT: vars.port(8083),
  INTERNAL_PORT: vars.port(9083),
  HOST: vars.host(),
  /** Shared secret the gateway sends as `x-th-internal-token` on every internal call. */
  INTERNAL_TOKEN: z.string().min(16).default(DEV_INTERNAL_TOKEN),
  /** Rows per store-and-publish batch of an ingest. */
  INGEST_BATCH_SIZE: vars.positiveInt(2000),
});

export type Config = ReturnType<typeof configSchema.load>;

/** The only read of the environment in this service. */
export function readConfig(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Config {
  const config = configSchema.load(env);
  refuseDevDefaultsInProduction(config, DEV_SECRETS);
  return config;
}
