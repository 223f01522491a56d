import type { TopicContract } from "@th/contracts";
import type { KafkaMessage } from "kafkajs";
import type { BatchOutcome, Outcome } from "../outcomes.ts";
import { decodeValue } from "../serde.ts";

export interface Delivered<T> {
  value: T;
  key: string | null;
  topic: string;
  partition: number;
  offset: string;
  headers: Record<string, string>;
  /** 1 on first delivery; grows while a thrown error is being retried. */
  attempt: number;
}

export type Handler<T> = (message: Delivered<T>) => Promise<Outcome | undefined>;

/**
 * Handles the decoded records of one fetched batch of one partition, in offset order, and
 * answers one outcome per record, in the same order (`undefined` for the whole answer, or for
 * one record, means done). Offsets are resolved only once it has resolved, so its effect must be
 * durable by then. A thrown error retries the whole batch with back-off; see `onBatch`.
 */
export type BatchHandler<T> = (
  records: readonly Delivered<T>[],
) => Promise<readonly (BatchOutcome | undefined)[] | undefined>;

/** A contract of any record type, as lists of topics hold them. */
export type AnyTopicContract = TopicContract<never>;

/** A handler of one record at a time (`on`) or of a fetched batch at a time (`onBatch`). */
export type Subscription = RecordSubscription | BatchSubscription;

export interface RecordSubscription {
  readonly contract: AnyTopicContract;
  readonly handle: (message: KafkaMessage, meta: MessageMeta) => Promise<Outcome | undefined>;
}

export interface BatchSubscription {
  readonly contract: AnyTopicContract;
  /** Throws PoisonRecordError for a record that cannot be read as the contract. */
  readonly decode: (message: KafkaMessage, meta: MessageMeta) => Delivered<unknown>;
  readonly handleBatch: (
    records: readonly Delivered<unknown>[],
  ) => Promise<readonly (BatchOutcome | undefined)[] | undefined>;
}

export interface MessageMeta {
  topic: string;
  partition: number;
  headers: Record<string, string>;
  attempt: number;
}

function delivered<T>(contract: TopicContract<T>, message: KafkaMessage, meta: MessageMeta) {
  return {
    value: decodeValue(contract, message.value, meta.headers),
    key: message.key?.toString() ?? null,
    topic: meta.topic,
    partition: meta.partition,
    offset: message.offset,
    headers: meta.headers,
    attempt: meta.attempt,
  };
}

/** Pairs a topic contract with a handler typed by it. */
export function on<T>(contract: TopicContract<T>, handler: Handler<T>): Subscription {
  return {
    contract: contract as AnyTopicContract,
    handle: (message, meta) => handler(delivered(contract, message, meta)),
  };
}

/**
 * Pairs a topic contract with a handler of whole fetched batches, for consumers whose cost is
 * per transaction rather than per record. Same guarantees as `on`, batch by batch:
 *
 * - The handler gets the records of one fetched batch of one partition that could be decoded;
 *   undecodable ones are parked with the reason. The offsets of the batch are resolved (and so
 *   committed) only after the handler resolved and every record it answered `park` for, and
 *   every undecodable one, was durably parked: a crash before that redelivers the whole batch.
 * - A thrown error retries the whole batch (from its first offset, the partition paused) with
 *   the same back-off as `on`. After `maxAttempts` failed attempts the records of that batch
 *   are handed over one at a time (a batch of one), each with its own attempts as under `on`,
 *   so only the record(s) that keep failing are parked and the partition goes on; records after
 *   that batch are batched again.
 * - `attempt` is the batch's attempt (or the lone record's, while isolating).
 * - The handler runs in one span (`consume <topic>`) that continues the trace of the batch's
 *   first traced record and links (up to 128) records of other traces; each record's own trace
 *   context stays in its `headers` (`traceContextOf(record.headers)`) for work that must
 *   continue it, such as an outbox row.
 */
export function onBatch<T>(contract: TopicContract<T>, handler: BatchHandler<T>): Subscription {
  return {
    contract: contract as AnyTopicContract,
    decode: (message, meta) => delivered(contract, message, meta),
    handleBatch: handler as BatchSubscription["handleBatch"],
  };
}
