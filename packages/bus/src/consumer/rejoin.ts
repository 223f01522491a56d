import type { Logger } from "@th/telemetry";
import type { Consumer, ConsumerRunConfig } from "kafkajs";
import { backoffMs } from "../outcomes.ts";

/**
 * kafkajs restarts a crashed consumer only when the error was one it knows to be passing; any
 * other (a handler's or the bus's own error escaping a batch) leaves the consumer stopped for
 * good, out of its group, while the process looks healthy. This rejoins it, with back-off,
 * until it runs again or `stop` is called.
 */
export function rejoinOnCrash(
  consumer: Consumer,
  runConfig: ConsumerRunConfig,
  logger: Logger,
): { stop(): void } {
  let stopped = false;
  let rejoinTimer: NodeJS.Timeout | undefined;
  const rejoin = (attempt: number) => {
    rejoinTimer = setTimeout(
      async () => {
        if (stopped) {
          return;
        }
        try {
          await consumer.connect();
          await consumer.run(runConfig);
          logger.info({ attempt }, "consumer rejoined its group");
        } catch (error) {
          logger.warn({ err: error, attempt }, "consumer could not rejoin; trying again");
          rejoin(attempt + 1);
        }
      },
      backoffMs(attempt, 500, 10_000),
    );
  };
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (payload.restart || stopped) {
      return;
    }
    logger.error({ err: payload.error }, "consumer crashed; rejoining its group");
    clearTimeout(rejoinTimer);
    rejoin(1);
  });
  return {
    stop: () => {
      stopped = true;
      clearTimeout(rejoinTimer);
    },
  };
}
