// `parcel.ingested` -> `match.found`, group `matcher.match`. Several matcher instances share the
// partitions. Each fetched batch of a partition is judged whole: the matches of all its parcels
// and their outbox records are written in one transaction (shared with the other partitions'
// batches committing at that moment), then the batch's offsets are resolved. A batch without
// matches costs no I/O. A parcel that cannot be judged is parked with its reason; the rest of
// its batch goes on.
import { type BatchOutcome, type Bus, done, onBatch, park, type RunningConsumer } from "@th/bus";
import { contracts } from "@th/contracts";
import { inTransaction, type Pool } from "@th/db";
import { type Logger, traceContextOf } from "@th/telemetry";
import { groupCommit } from "../db/group-commit.ts";
import { insertMatches, type NewMatch } from "../db/matches.ts";
import { UnjudgeableParcelError } from "../domain/predicate.ts";
import { judgeParcel } from "../matching/judge.ts";
import type { WatchlistCache } from "../matching/watchlist-cache.ts";

const MATCH_GROUP = "matcher.match";

export interface MatchConsumerDeps {
  bus: Bus;
  pool: Pool;
  logger: Logger;
  cache: WatchlistCache;
  /** Called after matches committed, so the outbox relay publishes them now. */
  onCommitted: () => void;
  partitionsConsumedConcurrently: number;
  /** Most bytes of one partition's records fetched (and so judged and written) at once. */
  maxBytesPerPartition?: number;
  now?: () => Date;
}

export interface MatchCounters {
  parcels: number;
  matches: number;
  parked: number;
}

export async function consumeParcelsForMatching(
  deps: MatchConsumerDeps,
): Promise<RunningConsumer & { counters: MatchCounters }> {
  const counters: MatchCounters = { parcels: 0, matches: 0, parked: 0 };
  const now = deps.now ?? (() => new Date());
  const write = groupCommit<NewMatch>(async (rows) => {
    const inserted = await inTransaction(deps.pool, (client) => insertMatches(client, rows));
    counters.matches += inserted;
  });
  const consumer = await deps.bus.consume({
    group: MATCH_GROUP,
    partitionsConsumedConcurrently: deps.partitionsConsumedConcurrently,
    ...(deps.maxBytesPerPartition ? { maxBytesPerPartition: deps.maxBytesPerPartition } : {}),
    subscriptions: [
      onBatch(contracts.parcelIngested, async (records) => {
        counters.parcels += records.length;
        // One freshness check for the batch: exact for its latest parcel is exact for all.
        let latestObservedMs = Number.NEGATIVE_INFINITY;
        for (const { value } of records) {
          const observedMs = Date.parse(value.observed_at);
          if (observedMs > latestObservedMs) {
            latestObservedMs = observedMs;
          }
        }
        if (Number.isFinite(latestObservedMs)) {
          await deps.cache.ensureFreshFor(latestObservedMs);
        }
        const index = deps.cache.index;
        const occurredAt = now().toISOString();
        const outcomes: BatchOutcome[] = [];
        const rows: NewMatch[] = [];
        for (const record of records) {
          const { value } = record;
          let matches: NewMatch[];
          try {
            matches = judgeParcel(index, value, occurredAt);
          } catch (error) {
            const reason =
              error instanceof UnjudgeableParcelError
                ? error.message
                : `evaluation failed: ${(error as Error).message}`;
            deps.logger.warn({ folio: value.folio, reason }, "parcel parked");
            outcomes.push(park(`parcel ${value.folio}: ${reason}`));
            continue;
          }
          outcomes.push(done);
          if (matches.length > 0) {
            // match.found continues the trace of the ingest that published this parcel.
            const traceContext = traceContextOf(record.headers);
            for (const match of matches) {
              match.traceContext = traceContext;
              rows.push(match);
            }
          }
        }
        if (rows.length > 0) {
          await write(rows);
          deps.onCommitted();
        }
        counters.parked += records.length - outcomes.filter((o) => o.kind === "done").length;
        return outcomes;
      }),
    ],
  });
  return Object.assign(consumer, { counters });
}
