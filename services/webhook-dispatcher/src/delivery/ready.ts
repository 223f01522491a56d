import type { Logger } from "@th/telemetry";
import type { ClaimedRow } from "../db/deliveries.ts";
import type { SlotGate } from "./slot-gate.ts";

/** A tenant whose slots are all held elsewhere is asked again after this long, then longer. */
const RETRY_MS = 20;
const RETRY_MAX_MS = 320;

export interface ReadyOptions {
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
}

/**
 * Claimed rows waiting, per tenant, for a slot of the tenant's concurrency (decision 0290). A
 * claim leases more rows than the tenant has free slots; the rest wait here, so a slot freed
 * by an answer is taken by the next row at once, without a claim statement between them. A row
 * that waited `maxWaitMs` (well inside its lease) is given back, as are all on `close`.
 */
export function createReadyQueues(options: ReadyOptions) {
  const queues = new Map<string, TenantQueue>();
  const sends = new Set<Promise<void>>();
  let closed = false;

  function queueOf(tenantId: string): TenantQueue {
    let queue = queues.get(tenantId);
    if (!queue) {
      queue = createTenantQueue(options, {
        track: (sent) => {
          sends.add(sent);
          sent.finally(() => sends.delete(sent));
        },
        isClosed: () => closed,
        onIdle: () => {
          if (queues.get(tenantId) === queue) {
            queues.delete(tenantId);
          }
        },
      });
      queues.set(tenantId, queue);
    }
    return queue;
  }

  return {
    /** Queues claimed rows (their views reserved) and sends what their tenants' slots allow. */
    add(rows: readonly ClaimedRow[]) {
      if (closed) {
        options.giveBack(rows, 0).catch(() => {});
        return;
      }
      const byTenant = new Map<string, ClaimedRow[]>();
      for (const row of rows) {
        const list = byTenant.get(row.tenant_id) ?? [];
        list.push(row);
        byTenant.set(row.tenant_id, list);
      }
      for (const [tenantId, tenantRows] of byTenant) {
        queueOf(tenantId).add(tenantRows);
      }
    },
    /** Slots of these tenants were freed in this process: their next rows take them. */
    freed(tenantIds: Iterable<string>) {
      for (const tenantId of new Set(tenantIds)) {
        queues.get(tenantId)?.freed();
      }
    },
    /** Rows waiting, over every tenant. */
    waiting(): number {
      let n = 0;
      for (const queue of queues.values()) {
        n += queue.waiting();
      }
      return n;
    },
    /** Gives every waiting row back (due at once, for any instance) and waits for the sends. */
    async close(): Promise<void> {
      closed = true;
      const rows = [...queues.values()].flatMap((queue) => queue.takeAll());
      await options.giveBack(rows, 0).catch(() => {});
      await Promise.allSettled([...sends]);
    },
  };
}

export type ReadyQueues = ReturnType<typeof createReadyQueues>;

/**
 * One tenant's waiting rows: takes the tenant's free slots for them in order (one Redis call)
 * and sends the ones slotted; asks again when a slot is freed here, or on its own when every
 * slot is held by other processes.
 */
function createTenantQueue(
  options: ReadyOptions,
  owner: { track: (sent: Promise<void>) => void; isClosed: () => boolean; onIdle: () => void },
) {
  let rows: ClaimedRow[] = [];
  const queuedAt = new WeakMap<ClaimedRow, number>();
  let sending = 0;
  let pumping = false;
  let again = false;
  let retryMs = 0;
  let retry: NodeJS.Timeout | undefined;

  function dropIfIdle() {
    if (rows.length === 0 && sending === 0 && !pumping && !retry) {
      owner.onIdle();
    }
  }

  function start(row: ClaimedRow) {
    sending++;
    const sent = options
      .send(row)
      .catch(() => {})
      .finally(() => {
        sending--;
        if (sending === 0 && rows.length > 0 && !pumping && !owner.isClosed()) {
          // Its slot was freed on the answer, and another process may have taken it since:
          // with nothing of the tenant in flight here, no freed slot will wake its rows.
          retryLater();
        }
        dropIfIdle();
      });
    owner.track(sent);
  }

  /** Rows past their wait go back; the others are answered in order. */
  function fresh(): ClaimedRow[] {
    const oldest = options.now() - options.maxWaitMs;
    const stale = rows.filter((row) => (queuedAt.get(row) ?? 0) < oldest);
    if (stale.length > 0) {
      const gone = new Set(stale);
      rows = rows.filter((row) => !gone.has(row));
      options.giveBack(stale, 0).catch(() => {});
    }
    return rows;
  }

  async function takeSlots(waiting: ClaimedRow[]): Promise<ClaimedRow[]> {
    try {
      const slotted = await options.gate.acquire(waiting);
      retryMs = 0;
      return slotted;
    } catch (error) {
      // Slots cannot be taken (Redis away): the tenant's rows go back, due again in a second.
      const back = rows.splice(0);
      options.logger.warn({ err: error, deliveries: back.length }, "taking tenant slots failed");
      await options.giveBack(back, 1000).catch(() => {});
      return [];
    }
  }

  /** One round: the free slots for the waiting rows, and the sends of the rows slotted. */
  async function round(): Promise<void> {
    const waiting = [...fresh()];
    if (waiting.length === 0) {
      return;
    }
    const taken = await takeSlots(waiting);
    // `close` may have given rows back meanwhile: their slots go back unused.
    const still = new Set(rows);
    const slotted = taken.filter((row) => still.has(row));
    options.gate.release(taken.filter((row) => !still.has(row)));
    const started = new Set(slotted);
    rows = rows.filter((row) => !started.has(row));
    slotted.forEach(start);
    if (slotted.length > 0 && rows.length === 0) {
      options.onDrained();
    }
    if (slotted.length < waiting.length && sending === 0) {
      // Every slot is held by other processes: nothing freed here will wake this tenant.
      retryLater();
    }
  }

  async function pump(): Promise<void> {
    if (pumping) {
      again = true;
      return;
    }
    pumping = true;
    try {
      do {
        again = false;
        await round();
      } while (again);
    } finally {
      pumping = false;
      dropIfIdle();
    }
  }

  function retryLater() {
    if (retry) {
      return;
    }
    retryMs = Math.min(RETRY_MAX_MS, Math.max(RETRY_MS, retryMs * 2));
    retry = setTimeout(() => {
      retry = undefined;
      pump().catch(() => {});
    }, retryMs);
  }

  return {
    add(added: readonly ClaimedRow[]) {
      const at = options.now();
      for (const row of added) {
        queuedAt.set(row, at);
        rows.push(row);
      }
      pump().catch(() => {});
    },
    freed() {
      if (rows.length > 0) {
        pump().catch(() => {});
      }
    },
    waiting: () => rows.length,
    /** Takes every waiting row out (to be given back) and stops asking on its own. */
    takeAll(): ClaimedRow[] {
      clearTimeout(retry);
      retry = undefined;
      return rows.splice(0);
    },
  };
}

type TenantQueue = ReturnType<typeof createTenantQueue>;
