import type { Logger } from "@th/telemetry";

export interface Stoppable {
  /** Stop taking work, finish or hand back what is in flight, then release resources. */
  stop(): Promise<void>;
}

/**
 * Stops the service on SIGTERM or SIGINT: `onDrain` first (readiness goes false), then `stop`
 * within the grace period, then exit. A second signal exits at once.
 */
export function stopOnSignals(options: {
  logger: Logger;
  service: Stoppable;
  onDrain?: () => void;
  graceMs?: number;
}): void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) {
      options.logger.warn({ signal }, "second signal; exiting now");
      process.exit(1);
    }
    stopping = true;
    options.logger.info({ signal }, "draining");
    options.onDrain?.();
    const timer = setTimeout(() => {
      options.logger.error("graceful stop took too long; exiting");
      process.exit(1);
    }, options.graceMs ?? 25_000);
    timer.unref();
    options.service
      .stop()
      .then(() => {
        options.logger.info("stopped");
        process.exit(0);
      })
      .catch((error: unknown) => {
        options.logger.error({ err: error }, "stop failed");
        process.exit(1);
      });
  };
  process.on("SIGTERM", handle);
  process.on("SIGINT", handle);
}
