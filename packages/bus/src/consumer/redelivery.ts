import type { Logger } from "@th/telemetry";
import type { Consumer } from "kafkajs";
import { backoffMs } from "../outcomes.ts";
import type { Attempts } from "./attempts.ts";

/** Longest wait between two tries of a record whose store is unreachable. */
const OUTAGE_BACKOFF_CAP_MS = 5_000;

/** The part of a kafkajs consumer that offers a partition's records again. */
export type Rewindable = Pick<Consumer, "pause" | "seek" | "resume">;

/**
 * Offers a partition's records again from an offset after a wait: the partition is paused and
 * rewound at once, so nothing after the offset is handled meanwhile, and resumed by a timer.
 */
export class Redelivery {
  readonly #consumer: Rewindable;
  readonly #attempts: Attempts;
  readonly #logger: Logger;
  readonly #timers = new Set<NodeJS.Timeout>();

  constructor(consumer: Rewindable, attempts: Attempts, logger: Logger) {
    this.#consumer = consumer;
    this.#attempts = attempts;
    this.#logger = logger;
  }

  /** Pauses the partition, rewinds it to `offset` and resumes it after `afterMs`. */
  after(topic: string, partition: number, offset: string, afterMs: number): void {
    this.#consumer.pause([{ topic, partitions: [partition] }]);
    this.#consumer.seek({ topic, partition, offset });
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.#consumer.resume([{ topic, partitions: [partition] }]);
    }, afterMs);
    this.#timers.add(timer);
  }

  /** Redelivers after a store outage, with back-off; the record's attempts stay as they were. */
  afterOutage(
    topic: string,
    partition: number,
    offset: string,
    attemptKey: string,
    error: unknown,
  ): void {
    const tries = this.#attempts.outageTry(attemptKey);
    this.#logger.warn(
      { err: error, topic, partition, offset, tries },
      "a store the handler needs is unreachable; will retry",
    );
    this.after(topic, partition, offset, backoffMs(tries, 200, OUTAGE_BACKOFF_CAP_MS));
  }

  /** Drops every pending resume: the consumer is stopping. */
  cancel(): void {
    for (const timer of this.#timers) {
      clearTimeout(timer);
    }
  }
}
