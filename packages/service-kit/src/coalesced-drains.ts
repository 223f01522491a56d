/**
 * Runs one drain at a time. A flush asked for while a drain runs gets a fresh drain after it: the
 * running one may already have read past rows committed a moment ago.
 */
export function coalescedDrains(drain: () => Promise<number>): {
  flush(): Promise<number>;
  running(): Promise<number> | undefined;
} {
  let running: Promise<number> | undefined;
  let pending: Promise<number> | undefined;
  function flush(): Promise<number> {
    if (!running) {
      running = drain().finally(() => {
        running = undefined;
      });
      return running;
    }
    if (!pending) {
      pending = running
        .catch(() => 0)
        .then(() => {
          pending = undefined;
          return flush();
        });
    }
    return pending;
  }
  return { flush, running: () => running };
}
