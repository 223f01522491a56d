import {
  baseShape,
  DEV_INTERNAL_SIGNING_SECRETS,
  DEV_SECRETS,
  defineConfig,
  internalSigningSecret,
  vars,
  z,
} from "@th/config";
import { parseTrustedProxies } from "./edge/client-address.ts";

const DEV_SESSION_SECRET = "dev-session-secret-not-for-production-0000";

export const configSchema = defineConfig(
  {
    ...baseShape,
    PORT: vars.port(8080),
    INTERNAL_PORT: vars.port(9080),
    HOST: vars.host(),
    /**
     * Longer than the ingress keeps its idle connections to the gateway (60 s for ingress-nginx
     * and cloud load balancers): were the gateway to close one first, a request the ingress had
     * just sent on it would fail with 502 (decision 0340).
     */
    HTTP_KEEP_ALIVE_TIMEOUT_MS: vars.positiveInt(65_000),
    /**
     * Server pepper of API key hashes; must equal the keys service's. One 32-byte key (version 1)
     * or `version:key` pairs, the current first: keys hashed under any listed version work.
     */
    KEY_PEPPER: vars.keyPeppers().default(DEV_SECRETS.KEY_PEPPER),
    /** Signs the gateway's calls to the services' internal APIs (decision 0320). */
    INTERNAL_SIGNING_SECRET: internalSigningSecret("gateway"),
    KEYS_URL: vars.url(["http", "https"]).default("http://127.0.0.1:8081"),
    LEDGER_URL: vars.url(["http", "https"]).default("http://127.0.0.1:8082"),
    PARCELS_URL: vars.url(["http", "https"]).default("http://127.0.0.1:8083"),
    MATCHER_URL: vars.url(["http", "https"]).default("http://127.0.0.1:8084"),
    DISPATCHER_URL: vars.url(["http", "https"]).default("http://127.0.0.1:8085"),
    PIPELINE_URL: vars.url(["http", "https"]).default("http://127.0.0.1:8086"),
    /** Where 403 and 402 answers send a tenant to upgrade. */
    UPGRADE_URL: vars.url(["http", "https"]).default("https://terminal.house/pricing"),
    /** Per client IP, for `/v1/public/*`. */
    PUBLIC_RATE_PER_MINUTE: vars.positiveInt(30),
    /** Per client IP, for requests refused with 401, so keys cannot be guessed at speed. */
    AUTH_FAILURE_RATE_PER_MINUTE: vars.positiveInt(60),
    /**
     * Trial starts per client address per hour, refused ones included, so one address cannot
     * test card after card (decision 0362).
     */
    TRIAL_STARTS_PER_ADDRESS_PER_HOUR: vars.positiveInt(6),
    /** Trials started per email domain per day (only started ones count; decision 0362). */
    TRIAL_STARTS_PER_EMAIL_DOMAIN_PER_DAY: vars.positiveInt(20),
    /**
     * Stripe's publishable key (pk_…), served to the sign-up page for Stripe.js (decision 0364).
     * Unset: the page offers the built-in processor's test cards, or in production no card form.
     */
    STRIPE_PUBLISHABLE_KEY: z
      .string()
      .regex(/^pk_(live|test)_\w+$/, "must be a Stripe publishable key (pk_live_… or pk_test_…)")
      .optional(),
    /** How long a tenant's tier and limits are trusted from the cache; tier changes show within it. */
    TENANT_CACHE_SECONDS: vars.positiveInt(30),
    /** Timeout of calls to internal services. */
    UPSTREAM_TIMEOUT_MS: vars.positiveInt(10_000),
    /**
     * How long a metered read waits for the broker to acknowledge its lead-views; past it the
     * read answers 503, the reservation is given back and nothing more of it is sent.
     */
    LEAD_VIEW_PUBLISH_TIMEOUT_MS: vars.positiveInt(2_000),
    /**
     * How long a read's lead-views may wait, while the previous produce request is unanswered,
     * for other reads' to share the next one (a lone read never waits); 0 shares only with the
     * reads answered in the same turn of the event loop (decision 0390).
     */
    LEAD_VIEW_PUBLISH_LINGER_MS: z.coerce.number().int().min(0).max(100).default(2),
    /**
     * Megabytes (of characters) of lead documents each instance holds, kept from parcel.ingested
     * (decision 0390); 0 holds none and sends every lead read to the parcels service.
     */
    LEAD_DOCUMENTS_MB: z.coerce.number().int().min(0).max(4_096).default(64),
    /**
     * How far behind parcel.ingested the held lead documents may be and still be served: past it
     * (the topic cannot be followed) lead reads go to the parcels service. More than twice the
     * tail's 250 ms poll, which vouches for the moment each poll was sent.
     */
    LEAD_DOCUMENTS_MAX_LAG_MS: z.coerce.number().int().min(600).default(1_500),
    /** Signs dashboard session tokens (HS256); at least 32 bytes, set in production. */
    SESSION_SECRET: z.string().min(32).default(DEV_SESSION_SECRET),
    /** Lifetime of the dashboard's access cookie; the page refreshes it before it ends. */
    SESSION_ACCESS_SECONDS: vars.positiveInt(900),
    /** Lifetime of a dashboard sign-in: after it the member signs in again. */
    SESSION_REFRESH_SECONDS: vars.positiveInt(43_200),
    /**
     * `__Host-` names for the dashboard's cookies (decision 0339): set when the dashboard is
     * served over TLS. Unset: on in production, off in development over plain HTTP.
     */
    SESSION_COOKIE_HOST_PREFIX: z.stringbool().optional(),
    /** Failed sign-ins of one account before it locks (1 s, doubling); decision 0335. */
    SIGN_IN_FREE_ATTEMPTS: vars.positiveInt(5),
    /** The longest lock of an account after failed sign-ins. */
    SIGN_IN_MAX_LOCK_SECONDS: vars.positiveInt(900),
    /**
     * Proxies whose X-Forwarded-For names the client (decision 0336): addresses, CIDR ranges or
     * `loopback` / `linklocal` / `uniquelocal`, comma-separated. Empty: the socket's address is
     * the client, whatever the header says.
     */
    TRUSTED_PROXIES: z
      .string()
      .default("")
      .transform((text, ctx) => {
        try {
          return parseTrustedProxies(text);
        } catch (error) {
          ctx.addIssue({ code: "custom", message: (error as Error).message });
          return z.NEVER;
        }
      }),
    /** Where the dashboard's built assets are; empty: the `@th/dashboard` package's `dist`. */
    DASHBOARD_DIR: z.string().optional(),
    /**
     * Strict-Transport-Security on every answer: the public origin is HTTPS (the ingress
     * terminates TLS). Unset: on in production, off elsewhere. Browsers ignore it on an answer
     * that reached them over plain HTTP (decision 0341).
     */
    HSTS: z.stringbool({ error: "must be true or false" }).optional(),
  },
  {
    devDefaults: {
      ...DEV_SECRETS,
      INTERNAL_SIGNING_SECRET: DEV_INTERNAL_SIGNING_SECRETS.gateway,
      SESSION_SECRET: DEV_SESSION_SECRET,
    },
  },
);

export type Config = ReturnType<typeof configSchema.load>;

/** The only read of the environment in this service. */
export const readConfig = configSchema.load;
