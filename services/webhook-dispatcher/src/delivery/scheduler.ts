import type { OutboxRelay } from "@th/service-kit";
import type { Logger } from "@th/telemetry";

/** Slots freed within this window share one claim: a claim costs about the same for one as many. */
const CLAIM_COALESCE_MS = 10;
const RECORD_FLUSH_WINDOW_MS = 25;

/** An idle worker's poll waits up to this many times `pollMs` (decision 0300). */
const IDLE_POLL_FACTOR = 4;

/**
 * What one poll came to: a full claim (more may be due), some rows, no claim (no room), or a
 * claim that found nothing.
 */
export type PollOutcome = "full" | "some" | "busy" | "empty";

/**
 * When the worker claims: every `pollMs`, at once when woken (new deliveries, room freed), at a
 * due time this process learned of, and again at once after a claim that filled its batch. One
 * claim runs at a time; a wake during one claims again right after it. Claims that find nothing
 * double the wait before the next poll, up to `IDLE_POLL_FACTOR` times `pollMs`; any wake or a
 * claim that finds rows brings it back to `pollMs`.
 */
export function createScheduler(options: {
  pollMs: number;
  now: () => number;
  logger: Logger;
  /** Claims once; answers what the claim came to. */
  poll: () => Promise<PollOutcome>;
}) {
  let timer: NodeJS.Timeout | undefined;
  let idleMs = options.pollMs;
  let polling = false;
  let again = false;
  let stopped = true;
  let wakeQueued = false;
  const wakeTimers = new Set<NodeJS.Timeout>();

  function schedule(ms: number) {
    if (stopped) {
      return;
    }
    clearTimeout(timer);
    timer = setTimeout(tick, ms);
  }

  async function tick() {
    if (stopped || polling) {
      return;
    }
    polling = true;
    again = false;
    let outcome: PollOutcome = "busy";
    try {
      outcome = await options.poll();
    } catch (error) {
      options.logger.warn({ err: error }, "claiming deliveries failed; will retry");
    } finally {
      polling = false;
      idleMs =
        outcome === "empty"
          ? Math.min(idleMs * 2, options.pollMs * IDLE_POLL_FACTOR)
          : options.pollMs;
      schedule(again || outcome === "full" ? 0 : idleMs);
    }
  }

  function wake() {
    idleMs = options.pollMs;
    if (polling) {
      again = true;
      return;
    }
    schedule(0);
  }

  return {
    wake,
    /** Polls at `at` (a due time this process learned of), as well as on the regular tick. */
    wakeAt(at: number) {
      const wait = at - options.now();
      if (wait <= 0) {
        wake();
        return;
      }
      const handle = setTimeout(() => {
        wakeTimers.delete(handle);
        wake();
      }, wait);
      wakeTimers.add(handle);
    },
    /** One claim for everything that finished in this turn, not one per delivery. */
    wakeSoon() {
      if (wakeQueued || stopped) {
        return;
      }
      wakeQueued = true;
      setTimeout(() => {
        wakeQueued = false;
        wake();
      }, CLAIM_COALESCE_MS);
    },
    start() {
      stopped = false;
      schedule(0);
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      for (const handle of wakeTimers) {
        clearTimeout(handle);
      }
    },
  };
}

/** Publishes the outbox the worker's records and dead letters wrote, soon after they commit. */
export function createOutboxFlusher(options: { relay: OutboxRelay; logger: Logger }) {
  let flushQueued = false;
  let flushTimer: NodeJS.Timeout | undefined;

  function flush() {
    options.relay.flush().catch((error: unknown) => {
      options.logger.warn({ err: error }, "outbox flush failed; the relay retries");
    });
  }

  return {
    /** Publishes the outbox now: a charge's lead-views, a dead letter. */
    soon() {
      if (flushQueued) {
        return;
      }
      flushQueued = true;
      setImmediate(() => {
        flushQueued = false;
        flush();
      });
    },
    /**
     * Publishes recorded attempts' events within a short window: attempts finish continuously,
     * and a drain per group would publish in many small produce requests (each costs about the
     * same whatever its size). The window is far inside the retry hand-off lead.
     */
    shortly() {
      if (flushTimer || flushQueued) {
        return;
      }
      flushTimer = setTimeout(() => {
        flushTimer = undefined;
        flush();
      }, RECORD_FLUSH_WINDOW_MS);
    },
    stop() {
      clearTimeout(flushTimer);
      flushTimer = undefined;
    },
  };
}

export type OutboxFlusher = ReturnType<typeof createOutboxFlusher>;
