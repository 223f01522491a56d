// Every live watchlist of every tenant, compiled and indexed in memory, in each matcher
// instance. How a change reaches every instance within a second:
//
// - the write notifies the Postgres channel `matcher_watchlists` in its transaction; each
//   instance LISTENs on it and refreshes when a notification arrives (milliseconds after commit);
// - each instance also refreshes once a second whatever it heard, covering a lost connection;
// - and before judging a parcel observed at or after the instant the cache was last confirmed,
//   the consumer refreshes first. Together with the write lock in db/watchlists.ts this makes
//   the cache exact for every parcel it judges: a version saved before a parcel was observed is
//   always known when the parcel is judged, whatever the notification timing.
//
// A refresh reads only watchlists whose change number is above the last one seen, and
// recompiles only those; rebuilding the index over 1,000 compiled watchlists takes well under
// a millisecond.
import type { Pool, PoolClient } from "@th/db";
import type { Logger } from "@th/telemetry";
import {
  listenForWatchlistChanges,
  loadWatchlistChanges,
  stopListeningForWatchlistChanges,
  type WatchlistSnapshot,
} from "../db/watchlists.ts";
import { compileVersions, type IndexedVersion, RecipeIndex } from "../domain/recipe-index.ts";

export interface CachedWatchlist {
  readonly id: string;
  readonly tenantId: string;
  readonly name: string;
}

export interface WatchlistCacheOptions {
  pool: Pool;
  logger: Logger;
  /** Refresh at least this often, notification or not. */
  pollIntervalMs?: number;
  /** Listen for change notifications (a dedicated connection per instance). */
  listen?: boolean;
}

export class WatchlistCache {
  readonly #pool: Pool;
  readonly #logger: Logger;
  readonly #pollIntervalMs: number;
  readonly #listen: boolean;
  readonly #entries = new Map<string, IndexedVersion<CachedWatchlist>[]>();
  #index = new RecipeIndex<CachedWatchlist>([]);
  #seq = 0n;
  #freshAtMs = Number.NEGATIVE_INFINITY;
  #running: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #listener: PoolClient | undefined;
  #stopped = false;
  /** Refreshes done, for tests and logs. */
  refreshes = 0;

  constructor(options: WatchlistCacheOptions) {
    this.#pool = options.pool;
    this.#logger = options.logger.child({ component: "watchlist-cache" });
    this.#pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.#listen = options.listen ?? true;
  }

  get index(): RecipeIndex<CachedWatchlist> {
    return this.#index;
  }

  /** The database instant up to which the cache is known to be exact. */
  get freshAtMs(): number {
    return this.#freshAtMs;
  }

  get watchlistCount(): number {
    return this.#entries.size;
  }

  async start(): Promise<void> {
    this.#stopped = false;
    await this.refresh();
    if (this.#listen) {
      await this.#connectListener();
    }
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    const listener = this.#listener;
    this.#listener = undefined;
    if (listener) {
      listener.removeAllListeners("notification");
      await stopListeningForWatchlistChanges(listener).catch(() => {});
      listener.release();
    }
    await this.#running?.catch(() => {});
  }

  /**
   * Reads what changed since the last refresh. A call while a refresh runs gets one more
   * refresh after it (the running one may have read before the change it was asked for).
   */
  refresh(): Promise<void> {
    if (!this.#running) {
      this.#running = this.#load().finally(() => {
        this.#running = undefined;
      });
      return this.#running;
    }
    if (!this.#queued) {
      this.#queued = this.#running
        .catch(() => {})
        .then(() => {
          this.#queued = undefined;
          return this.refresh();
        });
    }
    return this.#queued;
  }

  /** Makes sure the cache knows every version in force at `observedMs` (one refresh at most). */
  async ensureFreshFor(observedMs: number): Promise<void> {
    if (observedMs < this.#freshAtMs) {
      return;
    }
    await this.refresh();
  }

  async #load(): Promise<void> {
    const { seq, atMs, changed } = await loadWatchlistChanges(this.#pool, this.#seq);
    if (changed.length > 0) {
      for (const snapshot of changed) {
        this.#apply(snapshot);
      }
      this.#index = new RecipeIndex([...this.#entries.values()].flat());
      this.#logger.debug(
        { changed: changed.length, watchlists: this.#entries.size, ...this.#index.stats },
        "watchlist cache refreshed",
      );
    }
    if (seq > this.#seq) {
      this.#seq = seq;
    }
    this.#freshAtMs = Math.max(this.#freshAtMs, atMs);
    this.refreshes++;
  }

  #apply(snapshot: WatchlistSnapshot): void {
    if (snapshot.deleted || snapshot.versions.length === 0) {
      this.#entries.delete(snapshot.id);
      return;
    }
    const watchlist: CachedWatchlist = {
      id: snapshot.id,
      tenantId: snapshot.tenantId,
      name: snapshot.name,
    };
    this.#entries.set(snapshot.id, compileVersions(watchlist, snapshot.versions));
  }

  #schedule(): void {
    if (this.#stopped) {
      return;
    }
    this.#timer = setTimeout(() => {
      this.refresh()
        .catch((error: unknown) => this.#logger.warn({ err: error }, "watchlist refresh failed"))
        .finally(() => this.#schedule());
    }, this.#pollIntervalMs);
    this.#timer.unref();
  }

  async #connectListener(): Promise<void> {
    try {
      const client = await this.#pool.connect();
      client.on("notification", () => {
        this.refresh().catch((error: unknown) =>
          this.#logger.warn({ err: error }, "watchlist refresh failed"),
        );
      });
      client.on("error", (error) => {
        this.#logger.warn({ err: error }, "watchlist listener lost; reconnecting");
        if (this.#listener === client) {
          this.#listener = undefined;
          client.release(error);
          this.#reconnectLater();
        }
      });
      await listenForWatchlistChanges(client);
      if (this.#stopped) {
        client.release();
        return;
      }
      this.#listener = client;
      // Whatever changed while we were not listening.
      await this.refresh();
    } catch (error) {
      this.#logger.warn({ err: error }, "watchlist listener could not connect; retrying");
      this.#reconnectLater();
    }
  }

  #reconnectLater(): void {
    if (this.#stopped) {
      return;
    }
    setTimeout(() => void this.#connectListener(), 1000).unref();
  }
}
