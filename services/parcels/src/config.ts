import { ConfigError, commonShape, defineConfig, vars, z } from "@th/config";

/** The token internal callers present in development; production must set its own. */
export const DEV_INTERNAL_TOKEN = "dev-internal-token-not-for-production";

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
  if (config.NODE_ENV === "production" && config.INTERNAL_TOKEN === DEV_INTERNAL_TOKEN) {
    throw new ConfigError([
      { variable: "INTERNAL_TOKEN", reason: "the development default is refused in production" },
    ]);
  }
  return config;
}
