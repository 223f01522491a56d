import { DEV_SECRETS, defineConfig, receiverDevDefaults, serviceShape, vars } from "@th/config";
import { contracts } from "@th/contracts";
import { RETENTION_BATCH_SIZE, RETENTION_INTERVAL_MS } from "@th/service-kit";
import { z } from "zod";

/** This service's name on the internal API and the callers it accepts (decision 0320). */
export const INTERNAL_RECEIVER = {
  service: "quota-ledger",
  callers: ["gateway", "webhook-dispatcher"],
} as const;

export const configSchema = defineConfig(
  {
    ...serviceShape({ port: 8082, internalPort: 9082, ...INTERNAL_RECEIVER }),
    /** How long the seed answer waits for the ledger to reach the tenant's partition's end. */
    SEED_CATCH_UP_TIMEOUT_MS: vars.positiveInt(5000),
    /** leadview.recorded partitions written at once by the live ledger consumer. */
    LEDGER_PARTITIONS_CONCURRENTLY: vars.positiveInt(4),
    /**
     * What a fetch of leadview.recorded waits for before it answers: this many bytes, or
     * LEDGER_FETCH_MAX_WAIT_MS. Under load the ledger then writes fewer, larger batches (the
     * write costs per call more than per row); when traffic is light a view waits that long.
     */
    LEDGER_FETCH_MIN_BYTES: vars.positiveInt(16_384),
    LEDGER_FETCH_MAX_WAIT_MS: vars.positiveInt(50),
    /**
     * How often the live ledger commits its offsets (after every batch, it cost the broker and
     * this process a request per batch). Rows are idempotent: a crash redelivers this much more.
     */
    LEDGER_COMMIT_INTERVAL_MS: vars.positiveInt(1_000),
    /** How long a rebuild waits for the live ledger to reach the offsets it replayed. */
    REBUILD_LIVE_CATCH_UP_TIMEOUT_MS: vars.positiveInt(30_000),
    /** Pause between retention rounds (decision 0393). */
    RETENTION_INTERVAL_MS: vars.positiveInt(RETENTION_INTERVAL_MS),
    /** Rows a retention statement removes at most. */
    RETENTION_BATCH_SIZE: vars.positiveInt(RETENTION_BATCH_SIZE),
    /**
     * Days lead-views are kept at least; each is removed with its month. As long as
     * leadview.recorded keeps its events, so the rebuild can compare all the log holds. Never
     * under 32: a billing period is at most 31 days, so the current one's views always stay.
     */
    LEAD_VIEW_RETENTION_DAYS: z.coerce
      .number()
      .int()
      .min(32)
      .default(Math.round(contracts.leadViewRecorded.retentionMs / 86_400_000)),
    /**
     * Days after a read's UTC day during which its void can still reach the ledger: the gateway
     * retries a void until the broker takes it, and the ledger applies it when its consumer gets
     * there. Voids and runners-up of a day are kept through the window and removed the day after.
     */
    LEAD_VIEW_VOID_WINDOW_DAYS: vars.positiveInt(7),
  },
  { devDefaults: { ...DEV_SECRETS, ...receiverDevDefaults(INTERNAL_RECEIVER) } },
);

export type Config = ReturnType<typeof configSchema.load>;

/** The only read of the environment in this service. */
export const readConfig = configSchema.load;
