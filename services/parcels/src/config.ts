import { commonShape, defineConfig, vars } from "@th/config";

export const configSchema = defineConfig({
  ...commonShape,
  PORT: vars.port(8083),
  INTERNAL_PORT: vars.port(9083),
  HOST: vars.host(),
});

export type Config = ReturnType<typeof configSchema.load>;

/** The only read of the environment in this service. */
export function readConfig(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Config {
  return configSchema.load(env);
}
