// Group commit: every caller that needs durability awaits the next flush round, and one round
// fdatasyncs every file written since the previous round. Concurrent acks=-1 produces and offset
// commits therefore share a single fsync per file instead of paying one each.

export interface Syncable {
  sync(): Promise<void>;
}

export class Flusher {
  private dirty = new Set<Syncable>();
  private waiters: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];
  private running = false;
  private scheduled = false;

  markDirty(target: Syncable): void {
    this.dirty.add(target);
  }

  forget(target: Syncable): void {
    this.dirty.delete(target);
  }

  /** Resolves once everything marked dirty before this call is on stable storage. */
  flush(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.running || this.scheduled) {
      return;
    }
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.runRound();
    });
  }

  private async runRound(): Promise<void> {
    this.running = true;
    const targets = [...this.dirty];
    this.dirty.clear();
    const waiters = this.waiters;
    this.waiters = [];
    try {
      await Promise.all(targets.map((t) => t.sync()));
      for (const w of waiters) {
        w.resolve();
      }
    } catch (error) {
      for (const w of waiters) {
        w.reject(error);
      }
    } finally {
      this.running = false;
      if (this.waiters.length > 0) {
        this.schedule();
      }
    }
  }
}
