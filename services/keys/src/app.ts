import { keyPeppersOf } from "@th/config";
import {
  createHttpApp,
  createMetrics,
  createOutboxRelay,
  createRetention,
  requireSignedCalls,
  type ServiceApp,
  type ServiceDeps,
} from "@th/service-kit";
import { StripePaymentProvider } from "./clients/stripe-payments.ts";
import { type Config, INTERNAL_RECEIVER } from "./config.ts";
import { createAccounts } from "./db/accounts.ts";
import { keysRetentionRules } from "./db/retention.ts";
import { LocalPaymentProvider, type PaymentProvider } from "./domain/payment-provider.ts";
import { registerInternalAccountRoutes } from "./routes/internal-accounts.ts";

export interface KeysAppOptions {
  payments?: PaymentProvider;
  now?: () => Date;
}

/** The card processor the settings name (config.ts has checked that Stripe's are complete). */
export function paymentsOf(config: Config): PaymentProvider {
  if (config.PAYMENT_PROVIDER === "local") {
    return new LocalPaymentProvider();
  }
  const setting = (value: string | undefined) => value ?? "";
  return new StripePaymentProvider({
    secretKey: setting(config.STRIPE_SECRET_KEY),
    webhookSigningSecret: setting(config.STRIPE_WEBHOOK_SECRET),
    prices: {
      starter: setting(config.STRIPE_PRICE_STARTER),
      operator: setting(config.STRIPE_PRICE_OPERATOR),
      team: setting(config.STRIPE_PRICE_TEAM),
      custom: setting(config.STRIPE_PRICE_CUSTOM),
    },
    timeoutMs: config.STRIPE_TIMEOUT_MS,
  });
}

/** Builds the keys service without listening or starting its timers. */
export async function buildApp(deps: ServiceDeps<Config>, options: KeysAppOptions = {}) {
  const payments = options.payments ?? paymentsOf(deps.config);
  if (payments.name === "local") {
    deps.logger.warn(
      "payments: the built-in test processor (PAYMENT_PROVIDER=local) charges nothing real; production refuses it",
    );
  }
  const accounts = createAccounts({
    pool: deps.pool,
    peppers: keyPeppersOf(deps.config),
    payments,
    now: options.now ?? (() => new Date()),
    graceDays: deps.config.PAYMENT_GRACE_DAYS,
  });
  const relay = createOutboxRelay({ pool: deps.pool, bus: deps.bus, logger: deps.logger });
  const retention = createRetention({
    pool: deps.pool,
    logger: deps.logger,
    metrics: deps.metrics ?? createMetrics("keys"),
    rules: keysRetentionRules(deps.config.EXPIRED_CREDENTIALS_KEPT_HOURS * 3_600_000),
    intervalMs: deps.config.RETENTION_INTERVAL_MS,
    batchSize: deps.config.RETENTION_BATCH_SIZE,
    ...(options.now ? { now: options.now } : {}),
  });
  const http = await createHttpApp({ logger: deps.logger, title: "keys (internal)" });
  requireSignedCalls(http, {
    service: INTERNAL_RECEIVER.service,
    callerKeys: deps.config.INTERNAL_CALLER_KEYS,
  });
  registerInternalAccountRoutes(http, accounts);
  // Events of a request go out right after it, not at the next relay tick.
  http.addHook("onResponse", async () => {
    relay.flush().catch(() => {});
  });

  let conversionTimer: NodeJS.Timeout | undefined;
  const app: ServiceApp & {
    accounts: typeof accounts;
    relay: typeof relay;
    retention: typeof retention;
  } = {
    http,
    accounts,
    relay,
    retention,
    async start() {
      relay.start();
      retention.start();
      conversionTimer = setInterval(() => {
        accounts
          .convertEndedTrials()
          .then(() => accounts.suspendLapsedGrace())
          .catch((error: unknown) => {
            deps.logger.warn({ err: error }, "trial conversion or grace sweep failed; will retry");
          });
      }, deps.config.TRIAL_CONVERSION_INTERVAL_MS);
    },
    async stop() {
      clearInterval(conversionTimer);
      await retention.stop();
      await relay.stop();
    },
  };
  return app;
}
