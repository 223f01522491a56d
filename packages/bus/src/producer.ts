import { setTimeout as sleep } from "node:timers/promises";
import { backoffMs } from "./outcomes.ts";
import { BrokerConnectionError, Connection, type ConnectionSecurity, Reader } from "./wire.ts";

/**
 * The bus's producer: Produce v3 (Kafka 0.11 through 4.x) straight to each partition's leader,
 * one record batch per partition and request, acks=-1. Batches come ready-made from
 * `RecordBatchWriter`; this class routes them, waits for every acknowledgement and retries what
 * failed for a reason that can pass (a moved leader, a lost connection, too few replicas yet).
 * Metadata comes from a lookup the bus provides (kafkajs's admin client).
 */

const PRODUCE = 0;
const PRODUCE_VERSION = 3;

export interface BrokerAddress {
  host: string;
  port: number;
}

export interface TopicRoute {
  /** The leader of each partition, by partition number; undefined while it has none. */
  leaders: readonly (BrokerAddress | undefined)[];
}

export interface RecordProducerOptions {
  clientId: string;
  /** TLS and SASL, as every other connection of the process uses them. */
  security?: ConnectionSecurity;
  /** Fresh metadata of a topic; throws when it cannot be had (after its own retries). */
  lookup: (topic: string) => Promise<TopicRoute>;
  /** Further attempts of a batch that failed for a passing reason. */
  retries: number;
  initialRetryMs: number;
  /** How long the broker may wait for in-sync replicas before it answers. */
  ackTimeoutMs: number;
  /** How long an answer may take before the connection is given up (and the batch retried). */
  requestTimeoutMs: number;
  /** Metadata older than this is looked up again before use (partitions may have been added). */
  maxRouteAgeMs: number;
}

/** Error codes a produce may meet that pass: retried after a fresh look at the metadata. */
const PASSING = new Map<number, string>([
  [3, "UNKNOWN_TOPIC_OR_PARTITION"],
  [5, "LEADER_NOT_AVAILABLE"],
  [6, "NOT_LEADER_OR_FOLLOWER"],
  [7, "REQUEST_TIMED_OUT"],
  [13, "NETWORK_EXCEPTION"],
  [19, "NOT_ENOUGH_REPLICAS"],
  [20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND"],
  [56, "KAFKA_STORAGE_ERROR"],
  [74, "FENCED_LEADER_EPOCH"],
  [75, "UNKNOWN_LEADER_EPOCH"],
]);

const FINAL = new Map<number, string>([
  [2, "CORRUPT_MESSAGE"],
  [10, "MESSAGE_TOO_LARGE"],
  [17, "INVALID_TOPIC_EXCEPTION"],
  [18, "RECORD_LIST_TOO_LARGE"],
  [21, "INVALID_REQUIRED_ACKS"],
  [29, "TOPIC_AUTHORIZATION_FAILED"],
  [87, "INVALID_RECORD"],
]);

/**
 * A publish given up when its signal fired (a deadline, or the caller no longer wants it): no
 * batch of it is sent after that. `sent` is false when none had been sent at all, so none can be
 * in the log; true when a request was on the wire, which the broker may yet have appended.
 */
export class PublishAbortedError extends Error {
  readonly sent: boolean;

  constructor(message: string, sent: boolean) {
    super(message);
    this.name = "PublishAbortedError";
    this.sent = sent;
  }
}

/** Resolves as `work` does, or rejects once `signal` fires, whichever comes first. */
export function unlessAborted<T>(
  work: Promise<T>,
  signal: AbortSignal | undefined,
  onAbort: () => Error,
): Promise<T> {
  if (!signal) {
    return work;
  }
  if (signal.aborted) {
    work.catch(() => {});
    return Promise.reject(onAbort());
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(onAbort());
    signal.addEventListener("abort", abort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener("abort", abort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", abort);
        reject(error);
      },
    );
  });
}

/** A batch the broker refused, or that still failed after every retry. */
export class ProduceError extends Error {
  readonly retriable: boolean;

  constructor(message: string, retriable: boolean) {
    super(message);
    this.name = "ProduceError";
    this.retriable = retriable;
  }
}

function errorOf(topic: string, partition: number, code: number): ProduceError {
  const passing = PASSING.get(code);
  const name = passing ?? FINAL.get(code) ?? "error";
  return new ProduceError(
    `produce to ${topic}/${partition} failed: ${name} (${code})`,
    passing !== undefined,
  );
}

function produceRequestHead(topic: string, partitions: number, ackTimeoutMs: number): Buffer {
  const name = Buffer.from(topic);
  const head = Buffer.allocUnsafe(2 + 2 + 4 + 4 + 2 + name.length + 4);
  let pos = head.writeInt16BE(-1, 0); // transactional id: none
  pos = head.writeInt16BE(-1, pos); // acks: every in-sync replica
  pos = head.writeInt32BE(ackTimeoutMs, pos);
  pos = head.writeInt32BE(1, pos); // one topic
  pos = head.writeInt16BE(name.length, pos);
  pos += name.copy(head, pos);
  head.writeInt32BE(partitions, pos);
  return head;
}

export class RecordProducer {
  readonly #options: RecordProducerOptions;
  readonly #routes = new Map<string, { at: number; route: Promise<TopicRoute> }>();
  readonly #connections = new Map<string, Promise<Connection>>();
  #closed = false;

  constructor(options: RecordProducerOptions) {
    this.#options = options;
  }

  /** The topic's metadata, looked up at most every `maxRouteAgeMs` unless a produce failed. */
  route(topic: string): Promise<TopicRoute> {
    const cached = this.#routes.get(topic);
    if (cached && Date.now() - cached.at < this.#options.maxRouteAgeMs) {
      return cached.route;
    }
    const route = this.#options.lookup(topic);
    const entry = { at: Date.now(), route };
    this.#routes.set(topic, entry);
    route.catch(() => {
      if (this.#routes.get(topic) === entry) {
        this.#routes.delete(topic);
      }
    });
    return route;
  }

  /**
   * Sends each partition's batches, in order per partition, and resolves once the broker
   * acknowledged all of them with acks=-1. A partition's later batch is sent only after its
   * earlier one was acknowledged, so retries never reorder a partition.
   */
  async produce(
    topic: string,
    batches: ReadonlyMap<number, readonly Buffer[]>,
    signal?: AbortSignal,
  ): Promise<void> {
    let sent = false;
    const aborted = () =>
      new PublishAbortedError(
        sent
          ? `produce to ${topic} given up with a request unanswered`
          : `produce to ${topic} given up before anything was sent`,
        sent,
      );
    let rounds = 0;
    for (const list of batches.values()) {
      rounds = Math.max(rounds, list.length);
    }
    for (let round = 0; round < rounds; round++) {
      let pending = new Map<number, Buffer>();
      for (const [partition, list] of batches) {
        const batch = list[round];
        if (batch) {
          pending.set(partition, batch);
        }
      }
      for (let attempt = 0; pending.size > 0; attempt++) {
        if (signal?.aborted) {
          throw aborted();
        }
        // The attempt goes on in the background when the signal fires (a metadata lookup or a
        // connection may still be under way); it checks the signal before it sends anything.
        const failed = await unlessAborted(
          this.#sendOnce(topic, pending, signal, () => {
            sent = true;
          }),
          signal,
          aborted,
        );
        if (failed.size === 0) {
          break;
        }
        const errors = [...failed.values()];
        const final = errors.find((error) => !error.retriable);
        if (final) {
          throw final;
        }
        if (attempt >= this.#options.retries) {
          throw errors[0] as ProduceError;
        }
        this.#routes.delete(topic);
        await unlessAborted(
          sleep(backoffMs(attempt + 1, this.#options.initialRetryMs)),
          signal,
          aborted,
        );
        if (this.#closed) {
          throw new ProduceError(`produce to ${topic}: the bus is closed`, false);
        }
        const retry = new Map<number, Buffer>();
        for (const partition of failed.keys()) {
          retry.set(partition, pending.get(partition) as Buffer);
        }
        pending = retry;
      }
    }
  }

  close() {
    this.#closed = true;
    for (const connection of this.#connections.values()) {
      connection.then(
        (open) => open.close(),
        () => {},
      );
    }
    this.#connections.clear();
  }

  /** One attempt at every pending batch; answers the partitions that failed, with why. */
  async #sendOnce(
    topic: string,
    pending: ReadonlyMap<number, Buffer>,
    signal: AbortSignal | undefined,
    onSend: () => void,
  ): Promise<Map<number, ProduceError>> {
    if (this.#closed) {
      throw new ProduceError(`produce to ${topic}: the bus is closed`, false);
    }
    const route = await this.route(topic);
    if (signal?.aborted) {
      throw new PublishAbortedError(`produce to ${topic} given up before it was sent`, false);
    }
    const failed = new Map<number, ProduceError>();
    const byLeader = new Map<string, { address: BrokerAddress; partitions: number[] }>();
    for (const partition of pending.keys()) {
      const leader = route.leaders[partition];
      if (!leader) {
        failed.set(partition, errorOf(topic, partition, partition < route.leaders.length ? 5 : 3));
        continue;
      }
      const id = `${leader.host}:${leader.port}`;
      const group = byLeader.get(id) ?? { address: leader, partitions: [] };
      group.partitions.push(partition);
      byLeader.set(id, group);
    }
    await Promise.all(
      [...byLeader].map(async ([id, { address, partitions }]) => {
        try {
          const connection = await this.#connection(id, address);
          if (signal?.aborted) {
            throw new PublishAbortedError(`produce to ${topic} given up before it was sent`, false);
          }
          const parts: Buffer[] = [
            produceRequestHead(topic, partitions.length, this.#options.ackTimeoutMs),
          ];
          for (const partition of partitions) {
            const batch = pending.get(partition) as Buffer;
            const prefix = Buffer.allocUnsafe(8);
            prefix.writeInt32BE(partition, 0);
            prefix.writeInt32BE(batch.length, 4);
            parts.push(prefix, batch);
          }
          onSend();
          const body = await connection.request(
            PRODUCE,
            PRODUCE_VERSION,
            parts,
            this.#options.requestTimeoutMs,
          );
          const answered = new Set<number>();
          const reader = new Reader(body);
          const topics = reader.int32();
          for (let t = 0; t < topics; t++) {
            reader.string();
            const count = reader.int32();
            for (let p = 0; p < count; p++) {
              const partition = reader.int32();
              const code = reader.int16();
              reader.int64(); // base offset
              reader.int64(); // log append time
              answered.add(partition);
              if (code !== 0) {
                failed.set(partition, errorOf(topic, partition, code));
              }
            }
          }
          for (const partition of partitions) {
            if (!answered.has(partition)) {
              failed.set(
                partition,
                new ProduceError(`produce to ${topic}/${partition}: no answer for it`, true),
              );
            }
          }
        } catch (error) {
          if (!(error instanceof BrokerConnectionError)) {
            throw error;
          }
          for (const partition of partitions) {
            failed.set(
              partition,
              new ProduceError(`produce to ${topic}/${partition}: ${error.message}`, true),
            );
          }
        }
      }),
    );
    return failed;
  }

  #connection(id: string, address: BrokerAddress): Promise<Connection> {
    const existing = this.#connections.get(id);
    if (existing) {
      return existing.then((connection) => {
        if (connection.usable) {
          return connection;
        }
        if (this.#connections.get(id) === existing) {
          this.#connections.delete(id);
        }
        return this.#connection(id, address);
      });
    }
    const opening = Connection.open(
      address.host,
      address.port,
      this.#options.clientId,
      this.#options.security,
    );
    this.#connections.set(id, opening);
    opening.catch(() => {
      if (this.#connections.get(id) === opening) {
        this.#connections.delete(id);
      }
    });
    return opening;
  }
}
