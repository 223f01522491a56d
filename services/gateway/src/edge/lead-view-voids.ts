import { type Bus, backoffMs } from "@th/bus";
import { contracts, type LeadViewVoided } from "@th/contracts";
import type { Logger } from "@th/telemetry";

/**
 * Voids not yet on the broker. A read that fails to record its views is rare; a backlog this long
 * means the broker has been away for a long while, and the oldest void is dropped (and logged)
 * rather than grow without bound.
 */
const MAX_PENDING = 50_000;

/**
 * Publishes `leadview.voided` for reads whose lead-views may have reached the log without being
 * delivered (docs/decisions/0190-lead-view-voided.md). A void must land eventually, whenever the
 * broker answers again, so it is kept and retried with back-off until the broker acknowledges
 * it; publishing it twice is harmless, as the ledger applies voids idempotently.
 */
export function createVoidPublisher(deps: {
  bus: Bus;
  logger: Logger;
  /** How long one publish of the backlog may wait for its acknowledgement. */
  publishTimeoutMs?: number;
}) {
  const pending: LeadViewVoided[] = [];
  let timer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> | undefined;
  let failures = 0;
  let closed = false;

  async function flushOnce(): Promise<void> {
    const batch = pending.slice(0, 500);
    if (batch.length === 0) {
      return;
    }
    try {
      await deps.bus.publish(contracts.leadViewVoided, batch, {
        signal: AbortSignal.timeout(deps.publishTimeoutMs ?? 10_000),
      });
      pending.splice(0, batch.length);
      failures = 0;
    } catch (error) {
      failures++;
      deps.logger.warn(
        { err: error, pending: pending.length, tries: failures },
        "lead-view voids could not be published yet; will retry",
      );
      throw error;
    }
  }

  function schedule(delayMs: number): void {
    if (closed || timer || flushing) {
      return;
    }
    timer = setTimeout(() => {
      timer = undefined;
      flushing = (async () => {
        while (pending.length > 0) {
          await flushOnce();
        }
      })()
        .catch(() => {})
        .finally(() => {
          flushing = undefined;
          if (pending.length > 0) {
            schedule(backoffMs(failures, 200, 10_000));
          }
        });
    }, delayMs);
    timer.unref();
  }

  return {
    /** Queues a void; it is published in the background, retried until acknowledged. */
    void(event: LeadViewVoided): void {
      pending.push(event);
      if (pending.length > MAX_PENDING) {
        const dropped = pending.shift();
        deps.logger.error(
          { tenant_id: dropped?.tenant_id, request_id: dropped?.request_id },
          "lead-view void dropped: too many waiting for the broker",
        );
      }
      schedule(0);
    },
    pending: () => pending.length,
    /** Tries to publish what is waiting before the process stops, for `waitMs` at most. */
    async close(waitMs = 5_000): Promise<void> {
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      const deadline = Date.now() + waitMs;
      const left = () => new Promise((resolve) => setTimeout(resolve, deadline - Date.now()));
      // A publish under way may wait on a broker that does not answer: never past the deadline.
      await Promise.race([flushing, left()]);
      while (!flushing && pending.length > 0 && Date.now() < deadline) {
        await Promise.race([
          flushOnce().catch(() => new Promise((resolve) => setTimeout(resolve, 200))),
          left(),
        ]);
      }
      if (pending.length > 0) {
        deps.logger.error(
          { pending: pending.length },
          "lead-view voids left unpublished at shutdown: the ledger keeps charging their views",
        );
      }
    },
  };
}
