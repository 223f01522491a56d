import { keyPeppersOf } from "@th/config";
import {
  createHttpApp,
  createOutboxRelay,
  requireSignedCalls,
  type ServiceApp,
  type ServiceDeps,
} from "@th/service-kit";
import { type Config, INTERNAL_RECEIVER } from "./config.ts";
import { createAccounts } from "./db/accounts.ts";
import { LocalPaymentProvider, type PaymentProvider } from "./domain/payment-provider.ts";
import { registerInternalAccountRoutes } from "./routes/internal-accounts.ts";

export interface KeysAppOptions {
  payments?: PaymentProvider;
  now?: () => Date;
}

/** Builds the keys service without listening or starting its timers. */
export async function buildApp(deps: ServiceDeps<Config>, options: KeysAppOptions = {}) {
  const accounts = createAccounts({
    pool: deps.pool,
    peppers: keyPeppersOf(deps.config),
    payments: options.payments ?? new LocalPaymentProvider(),
    now: options.now ?? (() => new Date()),
  });
  const relay = createOutboxRelay({ pool: deps.pool, bus: deps.bus, logger: deps.logger });
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
  const app: ServiceApp & { accounts: typeof accounts; relay: typeof relay } = {
    http,
    accounts,
    relay,
    async start() {
      relay.start();
      conversionTimer = setInterval(() => {
        accounts.convertEndedTrials().catch((error: unknown) => {
          deps.logger.warn({ err: error }, "trial conversion failed; will retry");
        });
      }, deps.config.TRIAL_CONVERSION_INTERVAL_MS);
    },
    async stop() {
      clearInterval(conversionTimer);
      await relay.stop();
    },
  };
  return app;
}
