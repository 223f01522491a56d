import { DEV_SECRETS, defineConfig, receiverDevDefaults, serviceShape, vars, z } from "@th/config";

/** This service's name on the internal API and the callers it accepts (decision 0320). */
export const INTERNAL_RECEIVER = { service: "keys", callers: ["gateway"] } as const;

export const configSchema = defineConfig(
  {
    ...serviceShape({ port: 8081, internalPort: 9081, ...INTERNAL_RECEIVER }),
    /**
     * Server pepper of API key hashes (HMAC-SHA-256): one 32-byte key (version 1) or
     * `version:key` pairs, the current first (decision 0345). New keys are hashed under the
     * current; a key under another listed version is re-hashed under it when next used.
     */
    KEY_PEPPER: vars.keyPeppers().default(DEV_SECRETS.KEY_PEPPER),
    /** `local` is the built-in test processor; a real processor adds its own value. */
    PAYMENT_PROVIDER: z.enum(["local"]).default("local"),
    /** How often ended trials are looked for and charged. */
    TRIAL_CONVERSION_INTERVAL_MS: vars.positiveInt(60_000),
  },
  { devDefaults: { ...DEV_SECRETS, ...receiverDevDefaults(INTERNAL_RECEIVER) } },
);

export type Config = ReturnType<typeof configSchema.load>;

/** The only read of the environment in this service. */
export const readConfig = configSchema.load;
