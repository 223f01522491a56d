// `parcel.ingested` -> `match.found`, group `matcher.match`. Several matcher instances share the
// partitions. A parcel that matches nothing costs no I/O; the matches of one that does are
// written with their outbox records in one transaction (shared with the other partitions being
// handled at that moment). A parcel that cannot be judged is parked with its reason.
import { type Bus, done, on, park, type RunningConsumer } from "@th/bus";
import { contracts } from "@th/contracts";
import { inTransaction, type Pool } from "@th/db";
import type { Logger } from "@th/telemetry";
import { groupCommit } from "../db/group-commit.ts";
import { insertMatches, type NewMatch } from "../db/matches.ts";
import { UnjudgeableParcelError } from "../domain/predicate.ts";
import { judgeParcel } from "../matching/judge.ts";
import type { WatchlistCache } from "../matching/watchlist-cache.ts";

export const MATCH_GROUP = "matcher.match";

export interface MatchConsumerDeps {
  bus: Bus;
  pool: Pool;
  logger: Logger;
  cache: WatchlistCache;
  /** Called after matches committed, so the outbox relay publishes them now. */
  onCommitted: () => void;
  partitionsConsumedConcurrently: number;
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
    subscriptions: [
      on(contracts.parcelIngested, async ({ value }) => {
        counters.parcels++;
        const observedMs = Date.parse(value.observed_at);
        if (!Number.isNaN(observedMs)) {
          await deps.cache.ensureFreshFor(observedMs);
        }
        let matches: NewMatch[];
        try {
          matches = judgeParcel(deps.cache.index, value, now().toISOString());
        } catch (error) {
          counters.parked++;
          const reason =
            error instanceof UnjudgeableParcelError
              ? error.message
              : `evaluation failed: ${(error as Error).message}`;
          deps.logger.warn({ folio: value.folio, reason }, "parcel parked");
          return park(`parcel ${value.folio}: ${reason}`);
        }
        if (matches.length === 0) {
          return done;
        }
        await write(matches);
        deps.onCommitted();
        return done;
      }),
    ],
  });
  return Object.assign(consumer, { counters });
}
