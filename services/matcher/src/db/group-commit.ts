/**
 * Group commit: callers hand in rows and wait until they are committed; while one transaction
 * runs, the rows handed in meanwhile gather into the next. Consumers of several partitions at
 * once thus share one transaction per round instead of one each, with no added wait when idle.
 * If a shared round fails, each caller's rows are retried alone so one bad row fails only its
 * own caller.
 */
export function groupCommit<T>(commit: (rows: T[]) => Promise<void>): (rows: T[]) => Promise<void> {
  interface Waiter {
    rows: T[];
    resolve: () => void;
    reject: (error: unknown) => void;
  }
  let queue: Waiter[] = [];
  let running = false;

  async function drain() {
    running = true;
    while (queue.length > 0) {
      const round = queue;
      queue = [];
      try {
        await commit(round.flatMap((waiter) => waiter.rows));
        for (const waiter of round) {
          waiter.resolve();
        }
      } catch (error) {
        if (round.length === 1) {
          round[0]?.reject(error);
          continue;
        }
        for (const waiter of round) {
          try {
            await commit(waiter.rows);
            waiter.resolve();
          } catch (alone) {
            waiter.reject(alone);
          }
        }
      }
    }
    running = false;
  }

  return (rows) =>
    new Promise<void>((resolve, reject) => {
      if (rows.length === 0) {
        resolve();
        return;
      }
      queue.push({ rows, resolve, reject });
      if (!running) {
        void drain();
      }
    });
}
