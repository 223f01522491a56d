/** How often a waiter asks for the group's committed offset while this process has not got there. */
const COMMITTED_POLL_MS = 100;

/**
 * How far a consumer has got in each partition, and who is waiting for it to get further. The
 * local figure is exact and immediate; the group's committed offset covers partitions another
 * member owns and what finished before this process started.
 */
export class ProcessedOffsets {
  readonly #next = new Map<string, bigint>();
  readonly #waiters = new Set<() => void>();

  advance(topic: string, partition: number, next: bigint) {
    const key = `${topic}/${partition}`;
    if ((this.#next.get(key) ?? -1n) < next) {
      this.#next.set(key, next);
      for (const wake of [...this.#waiters]) {
        wake();
      }
    }
  }

  close() {
    for (const wake of [...this.#waiters]) {
      wake();
    }
  }

  async waitFor(
    topic: string,
    partition: number,
    target: bigint,
    options: { timeoutMs: number; committed: () => Promise<bigint> },
  ): Promise<boolean> {
    const key = `${topic}/${partition}`;
    const deadline = Date.now() + options.timeoutMs;
    // Offset 0 means an empty partition: nothing to wait for.
    const reached = () => target <= 0n || (this.#next.get(key) ?? -1n) >= target;
    let nextCommittedCheck = 0;
    while (!reached()) {
      if (Date.now() >= nextCommittedCheck) {
        nextCommittedCheck = Date.now() + COMMITTED_POLL_MS;
        if ((await options.committed().catch(() => -1n)) >= target) {
          return true;
        }
        continue;
      }
      const wait = Math.min(deadline, nextCommittedCheck) - Date.now();
      if (Date.now() >= deadline) {
        return false;
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.#waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.max(1, wait));
        this.#waiters.add(wake);
      });
    }
    return true;
  }
}
