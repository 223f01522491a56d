import type { RunningConsumer } from "@th/bus";
import { contracts } from "@th/contracts";
import {
  createHttpApp,
  createMetrics,
  requireSignedCalls,
  type ServiceApp,
  type ServiceDeps,
} from "@th/service-kit";
import { type Config, INTERNAL_RECEIVER } from "./config.ts";
import {
  consumeLeadViews,
  consumeLeadViewVoids,
  consumeTenantChanges,
} from "./consumers/ledger.ts";
import { measureCounterDrift } from "./db/counter-drift.ts";
import { createLedger } from "./db/ledger.ts";
import { ensureLeadViewMonths } from "./db/partitions.ts";
import { createLedgerRetention } from "./db/retention.ts";
import { createTenants } from "./db/tenants.ts";
import { registerInternalUsageRoutes } from "./routes/internal-usage.ts";

export interface QuotaLedgerOptions {
  now?: () => Date;
}

/** Builds the service without listening or consuming; `start` begins consuming. */
export async function buildApp(deps: ServiceDeps<Config>, options: QuotaLedgerOptions = {}) {
  const now = options.now ?? (() => new Date());
  const ledger = createLedger(deps.pool);
  const tenants = createTenants(deps.pool);
  const retention = createLedgerRetention({
    ...deps,
    metrics: deps.metrics ?? createMetrics("quota-ledger"),
    now,
  });
  const consumers: RunningConsumer[] = [];
  let leadViewConsumer: RunningConsumer | undefined;

  /** True once the ledger has read the tenant's partition up to its end as of this call. */
  async function catchUp(tenantId: string): Promise<boolean> {
    const topic = contracts.leadViewRecorded.topic;
    const [partition, highWaterMarks] = await Promise.all([
      deps.bus.partitionFor(topic, tenantId),
      deps.bus.highWaterMarks(topic),
    ]);
    const high = highWaterMarks.get(partition) ?? "0";
    if (!leadViewConsumer) {
      return high === "0";
    }
    return leadViewConsumer.waitUntilProcessed(topic, partition, high, {
      timeoutMs: deps.config.SEED_CATCH_UP_TIMEOUT_MS,
    });
  }

  if (deps.metrics) {
    // Both gauges of one scrape read one comparison.
    let measured: { at: number; drift: ReturnType<typeof measureCounterDrift> } | undefined;
    const drift = () => {
      if (!measured || Date.now() - measured.at > 1_000) {
        measured = {
          at: Date.now(),
          drift: measureCounterDrift(deps.pool, deps.redis, now()),
        };
      }
      return measured.drift;
    };
    deps.metrics.gauge(
      "th_quota_counter_drift_tenants",
      "Tenants whose Redis lead-view counter differs from the ledger for the current period",
      [] as const,
      async (gauge) => {
        gauge.set((await drift()).tenants);
      },
    );
    deps.metrics.gauge(
      "th_quota_counter_drift_lead_views",
      "Lead-views by which the Redis counters differ from the ledger, added up over tenants",
      [] as const,
      async (gauge) => {
        gauge.set((await drift()).leadViews);
      },
    );
  }

  const http = await createHttpApp({ logger: deps.logger, title: "quota-ledger (internal)" });
  requireSignedCalls(http, {
    service: INTERNAL_RECEIVER.service,
    callerKeys: deps.config.INTERNAL_CALLER_KEYS,
  });
  registerInternalUsageRoutes(http, {
    ledger,
    tenants,
    catchUp,
    now,
  });

  const app: ServiceApp & {
    ledger: typeof ledger;
    tenants: typeof tenants;
    retention: typeof retention;
  } = {
    http,
    ledger,
    tenants,
    retention,
    async start() {
      // The coming months' partitions before the first view is read; the rounds keep them ahead,
      // and a view of a month without one makes its own, so a failure here is only logged.
      await ensureLeadViewMonths(deps.pool, now()).catch((error: unknown) =>
        deps.logger.warn({ err: error }, "lead-view partitions not made ahead; retried each round"),
      );
      consumers.push(await consumeTenantChanges(deps.bus, tenants));
      consumers.push(await consumeLeadViewVoids(deps.bus, ledger));
      leadViewConsumer = await consumeLeadViews(deps.bus, ledger, {
        partitionsConsumedConcurrently: deps.config.LEDGER_PARTITIONS_CONCURRENTLY,
        minBytes: deps.config.LEDGER_FETCH_MIN_BYTES,
        maxWaitMs: deps.config.LEDGER_FETCH_MAX_WAIT_MS,
        commitIntervalMs: deps.config.LEDGER_COMMIT_INTERVAL_MS,
      });
      consumers.push(leadViewConsumer);
      retention.start();
    },
    async stop() {
      await retention.stop();
      leadViewConsumer = undefined;
      await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
    },
  };
  return app;
}
