import type { Logger } from "@th/telemetry";
import type { ClaimedRow } from "../db/deliveries.ts";
import type { SlotGate } from "./slot-gate.ts";

/** A tenant whose slots are all held elsewhere is asked again after this long, then longer. */
const RETRY_MS = 20;
const RETRY_MAX_MS = 320;

interface Queue {
  rows: ClaimedRow[];
  /** Sends of this tenant under way in this process. */
  sending: number;
  pumping: boolean;
  again: boolean;
  retryMs: number;
  retry: NodeJS.Timeout | undefined;
}

/**
 * Claimed rows waiting, per tenant, for a slot of the tenant's concurrency (decision 0290). A
 * claim leases more rows than the tenant has free slots; the rest wait here, so a slot freed
 * by an answer is taken by the next row at once, without a claim statement between them. A row
 * that waited `maxWaitMs` (well inside its lease) is given back, as are all on `close`.
 */
export function createReadyQueues(options: {
  gate: SlotGate;
  logger: Logger;
  now: () => number;
  maxWaitMs: number;
  /** Sends one slotted row and settles it; resolves once it is finished. */
  send: (row: ClaimedRow) => Promise<void>;
  /** Ends the lease of rows that will not be sent here: due again after `delayMs`. */
  giveBack: (rows: readonly ClaimedRow[], delayMs: number) => Promise<void>;
  /** A tenant's queue ran empty while its rows were being sent: time to claim more. */
  onDrained: () => void;
}) {
  const queues = new Map<string, Queue>();
  const queuedAt = new WeakMap<ClaimedRow, number>();
  const sends = new Set<Promise<void>>();
  let closed = false;

  function queueOf(tenantId: string): Queue {
    let queue = queues.get(tenantId);
    if (!queue) {
      queue = { rows: [], sending: 0, pumping: false, again: false, retryMs: 0, retry: undefined };
      queues.set(tenantId, queue);
    }
    return queue;
  }

  function dropIfIdle(tenantId: string, queue: Queue) {
    if (queue.rows.length === 0 && queue.sending === 0 && !queue.pumping && !queue.retry) {
      queues.delete(tenantId);
    }
  }

  function start(tenantId: string, queue: Queue, row: ClaimedRow) {
    queue.sending++;
    const sent: Promise<void> = options
      .send(row)
      .catch(() => {})
      .finally(() => {
        queue.sending--;
        sends.delete(sent);
        if (queue.sending === 0 && queue.rows.length > 0 && !queue.pumping && !closed) {
          // Its slot was freed on the answer, and another process may have taken it since:
          // with nothing of the tenant in flight here, no freed slot will wake its rows.
          retryLater(tenantId, queue);
        }
        dropIfIdle(tenantId, queue);
      });
    sends.add(sent);
  }

  /** Rows past their wait go back; the others are answered in order. */
  function fresh(queue: Queue): ClaimedRow[] {
    const oldest = options.now() - options.maxWaitMs;
    const stale = queue.rows.filter((row) => (queuedAt.get(row) ?? 0) < oldest);
    if (stale.length > 0) {
      queue.rows = queue.rows.filter((row) => !stale.includes(row));
      options.giveBack(stale, 0).catch(() => {});
    }
    return queue.rows;
  }

  /** Takes the tenant's free slots for its waiting rows, in order, and sends the ones slotted. */
  async function pump(tenantId: string): Promise<void> {
    const queue = queueOf(tenantId);
    if (queue.pumping) {
      queue.again = true;
      return;
    }
    queue.pumping = true;
    try {
      do {
        queue.again = false;
        const waiting = [...fresh(queue)];
        if (waiting.length === 0) {
          break;
        }
        const taken = await takeSlots(queue, waiting);
        // `close` may have given rows back meanwhile: their slots go back unused.
        const still = new Set(queue.rows);
        const slotted = taken.filter((row) => still.has(row));
        options.gate.release(taken.filter((row) => !still.has(row)));
        const started = new Set(slotted);
        queue.rows = queue.rows.filter((row) => !started.has(row));
        for (const row of slotted) {
          start(tenantId, queue, row);
        }
        if (slotted.length > 0 && queue.rows.length === 0) {
          options.onDrained();
        }
        if (slotted.length < waiting.length && queue.sending === 0) {
          // Every slot is held by other instances: nothing freed here will wake this tenant.
          retryLater(tenantId, queue);
        }
      } while (queue.again);
    } finally {
      queue.pumping = false;
      dropIfIdle(tenantId, queue);
    }
  }

  async function takeSlots(queue: Queue, waiting: ClaimedRow[]): Promise<ClaimedRow[]> {
    try {
      const slotted = await options.gate.acquire(waiting);
      queue.retryMs = 0;
      return slotted;
    } catch (error) {
      // Slots cannot be taken (Redis away): the tenant's rows go back, due again in a second.
      const rows = queue.rows.splice(0);
      options.logger.warn({ err: error, deliveries: rows.length }, "taking tenant slots failed");
      await options.giveBack(rows, 1000).catch(() => {});
      return [];
    }
  }

  function retryLater(tenantId: string, queue: Queue) {
    if (queue.retry) {
      return;
    }
    queue.retryMs = Math.min(RETRY_MAX_MS, Math.max(RETRY_MS, queue.retryMs * 2));
    queue.retry = setTimeout(() => {
      queue.retry = undefined;
      pump(tenantId).catch(() => {});
    }, queue.retryMs);
  }

  return {
    /** Queues claimed rows (their views reserved) and sends what their tenants' slots allow. */
    add(rows: readonly ClaimedRow[]) {
      if (closed) {
        options.giveBack(rows, 0).catch(() => {});
        return;
      }
      const at = options.now();
      const tenants = new Set<string>();
      for (const row of rows) {
        queuedAt.set(row, at);
        queueOf(row.tenant_id).rows.push(row);
        tenants.add(row.tenant_id);
      }
      for (const tenantId of tenants) {
        pump(tenantId).catch(() => {});
      }
    },
    /** Slots of these tenants were freed in this process: their next rows take them. */
    freed(tenantIds: Iterable<string>) {
      for (const tenantId of new Set(tenantIds)) {
        if (queues.get(tenantId)?.rows.length) {
          pump(tenantId).catch(() => {});
        }
      }
    },
    /** Rows waiting, over every tenant. */
    waiting(): number {
      let n = 0;
      for (const queue of queues.values()) {
        n += queue.rows.length;
      }
      return n;
    },
    /** Gives every waiting row back (due at once, for any instance) and waits for the sends. */
    async close(): Promise<void> {
      closed = true;
      const rows: ClaimedRow[] = [];
      for (const queue of queues.values()) {
        clearTimeout(queue.retry);
        queue.retry = undefined;
        rows.push(...queue.rows.splice(0));
      }
      await options.giveBack(rows, 0).catch(() => {});
      await Promise.allSettled([...sends]);
    },
  };
}

export type ReadyQueues = ReturnType<typeof createReadyQueues>;
