// Parked Fetch requests (long-poll). A fetch waits on the partitions it reads; an append to any of
// them, a topic deletion, its deadline or its connection closing completes it.

export interface ParkedFetch {
  clientId: string;
  partitionKeys: string[];
  /** Re-evaluates the fetch; returns true when it has completed. */
  onAppend(): boolean;
  complete(): void;
}

export function fetchKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}

export class FetchPurgatory {
  private readonly byPartition = new Map<string, Set<ParkedFetch>>();
  private readonly all = new Set<ParkedFetch>();

  get size(): number {
    return this.all.size;
  }

  park(fetch: ParkedFetch): void {
    this.all.add(fetch);
    for (const key of fetch.partitionKeys) {
      let set = this.byPartition.get(key);
      if (set === undefined) {
        set = new Set();
        this.byPartition.set(key, set);
      }
      set.add(fetch);
    }
  }

  remove(fetch: ParkedFetch): void {
    this.all.delete(fetch);
    for (const key of fetch.partitionKeys) {
      const set = this.byPartition.get(key);
      if (set !== undefined) {
        set.delete(fetch);
        if (set.size === 0) {
          this.byPartition.delete(key);
        }
      }
    }
  }

  notifyAppend(topic: string, partition: number): void {
    const set = this.byPartition.get(fetchKey(topic, partition));
    if (set === undefined) {
      return;
    }
    for (const fetch of [...set]) {
      if (fetch.onAppend()) {
        this.remove(fetch);
      }
    }
  }

  /** Completes every parked fetch matching the predicate (topic deleted, group rebalancing, shutdown). */
  completeWhere(predicate: (fetch: ParkedFetch) => boolean): void {
    for (const fetch of [...this.all]) {
      if (predicate(fetch)) {
        this.remove(fetch);
        fetch.complete();
      }
    }
  }
}
