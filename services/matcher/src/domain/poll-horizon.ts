/**
 * Two bounds of a Postgres snapshot, as `pg_current_snapshot()` gives them (xid8 as text):
 * `xmin`, the oldest transaction still running, and `xmax`, one past the newest that ended. When
 * they differ, a transaction that ended is newer than one still running: polls hold it back.
 */
export interface SnapshotBounds {
  xmin: string;
  xmax: string;
}

/**
 * How long polls have been held back (decision 0397): a poll returns only the matches of
 * transactions older than the snapshot's `xmin`, so while one writing transaction stays open
 * anywhere on the instance, `xmin` stays on it. Successive samples tell how long it has: the time
 * since this `xmin` was first seen holding something back, a lower bound of how long it has. A busy
 * instance of short transactions moves `xmin` at every sample; nothing held back (`xmin` =
 * `xmax`) is 0.
 */
export class PollHorizon {
  #xmin: string | null = null;
  #since = 0;

  /** Records a sample taken at `nowMs`; answers the seconds polls have been held back. */
  observe(bounds: SnapshotBounds, nowMs: number): number {
    if (bounds.xmin === bounds.xmax) {
      this.#xmin = null;
      return 0;
    }
    if (bounds.xmin !== this.#xmin) {
      this.#xmin = bounds.xmin;
      this.#since = nowMs;
    }
    return (nowMs - this.#since) / 1000;
  }
}
