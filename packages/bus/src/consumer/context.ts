import type { Logger } from "@th/telemetry";
import type { KafkaMessage } from "kafkajs";
import type { Attempts } from "./attempts.ts";
import type { ProcessedOffsets } from "./processed-offsets.ts";
import type { Redelivery } from "./redelivery.ts";

/** A record to park, with its decoded headers and why. */
export interface ParkedRecord {
  message: KafkaMessage;
  headers: Record<string, string>;
  reason: string;
}

/** What the record path and the batch path of one running consumer share. */
export interface ConsumerContext {
  readonly logger: Logger;
  /** Attempts for a handler that throws, before the record is parked. */
  readonly maxAttempts: number;
  /** Whether a handler's error means a store it needs is unreachable (see `BusOptions`). */
  readonly isUnavailable: (error: unknown) => boolean;
  readonly attempts: Attempts;
  readonly redelivery: Redelivery;
  readonly progress: ProcessedOffsets;
  /** How often a long batch handler's wait heartbeats. */
  readonly heartbeatEveryMs: number;
  /** Parks copies of the records, durably, before the caller goes on. */
  park(topic: string, partition: number, records: readonly ParkedRecord[]): Promise<void>;
}
