import {
  ConfigError,
  DEV_INTERNAL_SIGNING_SECRETS,
  decodeKey,
  defineConfig,
  internalSigningSecret,
  receiverDevDefaults,
  serviceShape,
  vars,
  z,
} from "@th/config";

/** Development-only default of the secret-encryption key ring, refused in production. */
export const DEV_SECRET_KEYS =
  "dev1:4d1b2f0c8a7e6d5c4b3a29180f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6";

/** This service's name on the internal API and the callers it accepts (decision 0320). */
export const INTERNAL_RECEIVER = { service: "webhook-dispatcher", callers: ["gateway"] } as const;

export const configSchema = defineConfig(
  {
    ...serviceShape({ port: 8085, internalPort: 9085, ...INTERNAL_RECEIVER }),
    /** Signs this service's calls to the matcher and the ledger (decision 0320). */
    INTERNAL_SIGNING_SECRET: internalSigningSecret("webhook-dispatcher"),
    /** The matcher's internal API, asked whether a watchlist belongs to the caller's tenant. */
    MATCHER_URL: vars.url(["http", "https"]).default("http://127.0.0.1:8084"),
    /** The quota ledger's internal API, for re-seeding lead-view counters. */
    LEDGER_URL: vars.url(["http", "https"]).default("http://127.0.0.1:8082"),
    UPSTREAM_TIMEOUT_MS: vars.positiveInt(10_000),
    /**
     * Keys that encrypt endpoint secrets at rest: `id:key` pairs (32-byte keys in hex or base64),
     * comma-separated. The first encrypts new secrets; the others still decrypt older rows.
     */
    SECRET_KEYS: z
      .string()
      .default(DEV_SECRET_KEYS)
      .refine(
        (value) =>
          value
            .split(",")
            .every(
              (pair) =>
                /^[\w-]{1,32}:/.test(pair) &&
                decodeKey(pair.slice(pair.indexOf(":") + 1)) !== undefined,
            ),
        { message: "must be comma-separated id:key pairs with 32-byte keys" },
      ),
    /**
     * Development only: allows `http://` endpoint URLs and loopback addresses (never other private
     * ranges). Refused when NODE_ENV is production.
     */
    WEBHOOK_ALLOW_LOOPBACK_HTTP: vars.flag(false),
    /** A receiver gets this long to answer an attempt. */
    DELIVERY_TIMEOUT_MS: vars.positiveInt(10_000),
    /**
     * Multiplies the 30 s and 5 min retry stages and the 30 min dead-letter wait (tests shrink
     * them); the 1 s and 5 s stages always run in real time. 1 in production.
     */
    LONG_DELAY_SCALE: z.coerce.number().positive().max(1).default(1),
    /** How long a claimed delivery stays leased to the instance that claimed it. */
    LEASE_MS: vars.positiveInt(20_000),
    /**
     * How long a tenant concurrency slot stays leased without renewal; the holder renews every
     * third of it, so a crashed instance's slots are free again within this long.
     */
    SLOT_LEASE_MS: vars.positiveInt(3_000),
    /**
     * Scheduler poll interval. New work wakes the worker of the process that took it in (a match,
     * a retry hand-off, a replay, a release), so polling only finds what another process left:
     * expired leases and missed retries. Every poll is a claim statement.
     */
    POLL_MS: vars.positiveInt(100),
    /** Deliveries in flight in this process at once, across tenants. */
    MAX_IN_FLIGHT: vars.positiveInt(512),
    /** A retry the retry topic did not hand back this long after its due time is run anyway. */
    RETRY_SWEEP_GRACE_MS: vars.positiveInt(5_000),
    /** Concurrency of a tenant not yet seen on `tenant.changed`. */
    DEFAULT_CONCURRENT_WEBHOOKS: vars.positiveInt(5),
    /** Webhook endpoints one watchlist may have; one more answers 409 and creates nothing. */
    MAX_ENDPOINTS_PER_WATCHLIST: vars.positiveInt(5),
    /** Webhook endpoints one tenant may have across its watchlists; likewise. */
    MAX_ENDPOINTS_PER_TENANT: vars.positiveInt(50),
    /**
     * Pause between retention rounds: each creates the coming months' partitions, drops the
     * months of deliveries and attempts nothing in which is kept, and thins pinned ones
     * (decision 0392).
     */
    RETENTION_INTERVAL_MS: vars.positiveInt(60_000),
    /** Rows one retention statement deletes at most; a round runs at most 20 per table. */
    RETENTION_BATCH_SIZE: vars.positiveInt(1_000),
  },
  {
    devDefaults: {
      ...receiverDevDefaults(INTERNAL_RECEIVER),
      INTERNAL_SIGNING_SECRET: DEV_INTERNAL_SIGNING_SECRETS["webhook-dispatcher"],
      SECRET_KEYS: DEV_SECRET_KEYS,
    },
  },
);

export type Config = ReturnType<typeof configSchema.load>;

/** The only read of the environment in this service. */
export function readConfig(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Config {
  const config = configSchema.load(env);
  refuseDevFlagsInProduction(config);
  return config;
}

/** Plain-HTTP and loopback webhooks are for a developer's machine, never production. */
export function refuseDevFlagsInProduction(config: Config): void {
  if (config.NODE_ENV === "production" && config.WEBHOOK_ALLOW_LOOPBACK_HTTP) {
    throw new ConfigError([
      {
        variable: "WEBHOOK_ALLOW_LOOPBACK_HTTP",
        reason: "is a development flag and is refused in production",
      },
    ]);
  }
}
