import {
  ConfigError,
  DEV_SECRETS,
  defineConfig,
  type Environment,
  receiverDevDefaults,
  serviceShape,
  vars,
  z,
} from "@th/config";

/** This service's name on the internal API and the callers it accepts (decision 0320). */
export const INTERNAL_RECEIVER = { service: "keys", callers: ["gateway"] } as const;

/** The Stripe Price of each tier's monthly subscription, by the setting that names it. */
export const STRIPE_PRICE_SETTINGS = {
  starter: "STRIPE_PRICE_STARTER",
  operator: "STRIPE_PRICE_OPERATOR",
  team: "STRIPE_PRICE_TEAM",
  custom: "STRIPE_PRICE_CUSTOM",
} as const;

const stripePrice = () =>
  z
    .string()
    .regex(/^price_\w+$/, "must be a Stripe Price id (price_…)")
    .optional();

export const configSchema = defineConfig(
  {
    ...serviceShape({ port: 8081, internalPort: 9081, ...INTERNAL_RECEIVER }),
    /**
     * Server pepper of API key hashes (HMAC-SHA-256): one 32-byte key (version 1) or
     * `version:key` pairs, the current first (decision 0345). New keys are hashed under the
     * current; a key under another listed version is re-hashed under it when next used.
     */
    KEY_PEPPER: vars.keyPeppers().default(DEV_SECRETS.KEY_PEPPER),
    /**
     * The card processor (decision 0360): `stripe`, or `local`, the built-in test processor for
     * `npm start` and the tests, which production refuses.
     */
    PAYMENT_PROVIDER: z.enum(["local", "stripe"]).default("local"),
    /** Stripe's secret API key (a restricted key works), from a Secret. */
    STRIPE_SECRET_KEY: z
      .string()
      .regex(/^(sk|rk)_(live|test)_\w+$/, "must be a Stripe secret or restricted key")
      .optional(),
    /** The signing secret of the webhook endpoint registered at Stripe, from a Secret. */
    STRIPE_WEBHOOK_SECRET: z
      .string()
      .regex(/^whsec_\w+$/, "must be a Stripe webhook signing secret (whsec_…)")
      .optional(),
    STRIPE_PRICE_STARTER: stripePrice(),
    STRIPE_PRICE_OPERATOR: stripePrice(),
    STRIPE_PRICE_TEAM: stripePrice(),
    STRIPE_PRICE_CUSTOM: stripePrice(),
    /** How long one call to Stripe may take before it is retried or fails. */
    STRIPE_TIMEOUT_MS: vars.positiveInt(10_000),
    /**
     * Days a tenant whose payment failed keeps reading (past due) before it is suspended; a
     * payment made at any time restores it at once.
     */
    PAYMENT_GRACE_DAYS: vars.positiveInt(7),
    /**
     * How often lapsed grace periods are looked for (and, with the built-in processor, ended
     * trials charged).
     */
    TRIAL_CONVERSION_INTERVAL_MS: vars.positiveInt(60_000),
    /**
     * Hours dashboard sessions (with their refresh tokens), password and invite links and
     * pending trials are kept past their expiry before retention removes them (decision 0394).
     */
    EXPIRED_CREDENTIALS_KEPT_HOURS: vars.positiveInt(24),
    /** How often retention removes what has aged out. */
    RETENTION_INTERVAL_MS: vars.positiveInt(60_000),
    /** Most rows one retention statement removes, so none holds its locks long. */
    RETENTION_BATCH_SIZE: vars.positiveInt(1_000),
  },
  { devDefaults: { ...DEV_SECRETS, ...receiverDevDefaults(INTERNAL_RECEIVER) } },
);

export type Config = ReturnType<typeof configSchema.load>;

/** Why the payment settings cannot run together, each naming its variable. */
export function paymentSettingProblems(config: Config): { variable: string; reason: string }[] {
  if (config.PAYMENT_PROVIDER === "local") {
    return config.NODE_ENV === "production"
      ? [
          {
            variable: "PAYMENT_PROVIDER",
            reason:
              "production refuses the built-in test processor `local`; set PAYMENT_PROVIDER=stripe with STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET and STRIPE_PRICE_<TIER>",
          },
        ]
      : [];
  }
  const required = [
    "STRIPE_SECRET_KEY",
    "STRIPE_WEBHOOK_SECRET",
    ...Object.values(STRIPE_PRICE_SETTINGS),
  ] as const;
  return required
    .filter((variable) => config[variable] === undefined)
    .map((variable) => ({ variable, reason: "required with PAYMENT_PROVIDER=stripe" }));
}

/** The only read of the environment in this service. */
export function readConfig(env: Environment = process.env): Config {
  const config = configSchema.load(env);
  const problems = paymentSettingProblems(config);
  if (problems.length > 0) {
    throw new ConfigError(problems);
  }
  return config;
}
