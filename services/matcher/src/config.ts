import { DEV_SECRETS, defineConfig, receiverDevDefaults, serviceShape, vars } from "@th/config";

/** This service's name on the internal API and the callers it accepts (decision 0320). */
export const INTERNAL_RECEIVER = {
  service: "matcher",
  callers: ["gateway", "webhook-dispatcher"],
} as const;

export const configSchema = defineConfig(
  {
    ...serviceShape({ port: 8084, internalPort: 9084, ...INTERNAL_RECEIVER }),
    /** parcel.ingested partitions this instance matches at once (their writes share transactions). */
    MATCH_PARTITIONS_CONCURRENTLY: vars.positiveInt(12),
    /** parcel.ingested partitions written into the parcel projection at once. */
    PROJECTION_PARTITIONS_CONCURRENTLY: vars.positiveInt(12),
    /** Most parcels one manual run evaluates, most recently observed first. */
    MANUAL_RUN_MAX_PARCELS: vars.positiveInt(50_000),
    /** Manual runs one tenant may have queued or running at once, across its watchlists. */
    MANUAL_RUNS_PER_TENANT: vars.positiveInt(2),
    /** Live watchlists one tenant may keep. */
    MAX_WATCHLISTS_PER_TENANT: vars.positiveInt(500),
    /** Refresh of the watchlist cache when no change notification arrived. */
    WATCHLIST_POLL_MS: vars.positiveInt(1000),
    /**
     * Days a match is kept for polling and the CSV export; a poll cursor from before the matches
     * kept is refused with 410 cursor_expired (decision 0394).
     */
    MATCH_RETENTION_DAYS: vars.positiveInt(90),
    /** Days a manual run's record is kept. */
    MANUAL_RUN_RETENTION_DAYS: vars.positiveInt(90),
    /** How often retention removes what has aged out. */
    RETENTION_INTERVAL_MS: vars.positiveInt(60_000),
    /** Most rows one retention statement removes, so none holds its locks long. */
    RETENTION_BATCH_SIZE: vars.positiveInt(1_000),
  },
  { devDefaults: { ...DEV_SECRETS, ...receiverDevDefaults(INTERNAL_RECEIVER) } },
);

export type Config = ReturnType<typeof configSchema.load>;

/** The only read of the environment in this service. */
export const readConfig = configSchema.load;
