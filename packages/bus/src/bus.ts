import {
  parkedTopicOf,
  SINGLE_NODE_REPLICATION,
  type TopicContract,
  type TopicPlanEntry,
  topicPlan,
} from "@th/contracts";
import type { Logger } from "@th/telemetry";
import type { Admin, Consumer, Kafka } from "kafkajs";
import { Attempts } from "./consumer/attempts.ts";
import type { ConsumerContext } from "./consumer/context.ts";
import { dispatchBatches } from "./consumer/dispatch.ts";
import { parkRecords } from "./consumer/park.ts";
import { ProcessedOffsets } from "./consumer/processed-offsets.ts";
import { Redelivery } from "./consumer/redelivery.ts";
import { rejoinOnCrash } from "./consumer/rejoin.ts";
import type { AnyTopicContract, Subscription } from "./consumer/subscriptions.ts";

export { PARK_HEADERS } from "./consumer/park.ts";
export type { PublishOptions } from "./publisher.ts";
export type { ReplayedRecord, ReplayOptions, ReplayResult } from "./replay.ts";

import { kafkaClient } from "./kafka-client.ts";
import { type LingeringOptions, LingeringPublisher } from "./lingering.ts";
import { partitionOfKey } from "./partitioner.ts";
import { Publisher, type PublishOptions } from "./publisher.ts";
import { awaitKafka, type KafkaProblem } from "./reachability.ts";
import { encodeHeaders } from "./record-batch.ts";
import { type ReplayOptions, type ReplayResult, replayTopic } from "./replay.ts";
import { type EncodedRecords, encodeValueTransient } from "./serde.ts";
import { type KeyTail, type KeyTailHandlers, type KeyTailOptions, tailKeys } from "./tail.ts";
import {
  applyTopicDifferences,
  diffTopics,
  missingTopics,
  observeTopics,
  type TopicDifference,
} from "./topic-admin.ts";
import type { ConnectionSecurity } from "./wire.ts";

export {
  type AnyTopicContract,
  type BatchHandler,
  type BatchSubscription,
  type Delivered,
  type Handler,
  on,
  onBatch,
  type RecordSubscription,
  type Subscription,
} from "./consumer/subscriptions.ts";

/** A service met a cluster without some of its topics: the topic plan was not applied. */
export class MissingTopicsError extends Error {
  readonly topics: readonly string[];

  constructor(topics: readonly string[]) {
    super(
      `Kafka lacks topic${topics.length === 1 ? "" : "s"} ${topics.join(", ")}: apply the topic plan first (\`npm run topics -- --apply\`; the Helm chart runs it as a hook)`,
    );
    this.name = "MissingTopicsError";
    this.topics = topics;
  }
}

export interface BusOptions {
  brokers: readonly string[];
  /** TLS for every connection (kafkajs's and the bus's own); plaintext when absent. */
  tls?: ConnectionSecurity["tls"];
  /** SASL for every connection; none when absent. */
  sasl?: ConnectionSecurity["sasl"];
  clientId: string;
  logger: Logger;
  /**
   * Tests shorten these. Production keeps kafkajs's heartbeat (3 s) and a 10 s session
   * (docs/decisions/0191-consumer-session-timeout.md).
   */
  consumerTimings?: {
    sessionTimeout?: number;
    heartbeatInterval?: number;
    maxWaitTimeInMs?: number;
  };
  /** Retries of a failed request before it fails; defaults to 8 (about a minute of back-off). */
  retries?: number;
  /**
   * Whether a handler's error means a store it needs is unreachable (an outage, not a bad
   * record): such a record is retried with back-off (at most 5 s apart) for as long as the
   * outage lasts, and those attempts never count toward parking it.
   */
  isUnavailable?: (error: unknown) => boolean;
}

/**
 * How long the group waits for a member that stopped heartbeating (a process killed or hung)
 * before its partitions move: kafkajs's 30 s held a killed instance's partitions idle for longer
 * than the 30 s in which work must resume, so 10 s, with a heartbeat every 3 s.
 */
const SESSION_TIMEOUT_MS = 10_000;

export interface PublishedRecord<T> {
  value: T;
  /** Overrides the shared headers, e.g. a stored `traceparent`. */
  headers?: Record<string, string>;
}

export interface ConsumeOptions {
  /** Consumer group, named `<service>.<purpose>`. */
  group: string;
  subscriptions: readonly Subscription[];
  fromBeginning?: boolean;
  /** Attempts for a handler that throws, before the record is parked. */
  maxAttempts?: number;
  partitionsConsumedConcurrently?: number;
  /**
   * Most bytes one fetch returns per partition (kafkajs's default, 1 MiB, unless set): the
   * ceiling of an `onBatch` batch. A fetch answers as soon as any record is there, so an idle
   * partition's batch is its one new record, with no added wait.
   */
  maxBytesPerPartition?: number;
  /**
   * Bytes a fetch waits for before it answers, at most `maxWaitTimeInMs` (the bus's timing unless
   * set): a consumer whose work costs per batch rather than per record (a write of the batch)
   * takes fewer, larger batches under load, at the cost of that wait when traffic is light.
   */
  minBytes?: number;
  maxWaitTimeInMs?: number;
  /**
   * Commits the group's offsets at most this often instead of after every batch: for a consumer
   * of many small batches whose handler is idempotent, a crash then redelivers up to this much
   * more, and members watching the group's committed offsets see progress this much later.
   */
  commitIntervalMs?: number;
}

export interface RunningConsumer {
  stop(): Promise<void>;
  /**
   * Resolves true once this group has finished (done or parked) every record of the partition
   * below `offset`, by this process or by another member of the group (seen through its
   * committed offsets); false when `timeoutMs` passes first.
   */
  waitUntilProcessed(
    topic: string,
    partition: number,
    offset: string,
    options?: { timeoutMs?: number },
  ): Promise<boolean>;
}

/**
 * The only door to Kafka. Producers publish typed values by contract; consumers get typed values
 * and answer with an outcome. Offsets are committed only for records whose outcome is done or
 * parked, so a crash mid-handler means redelivery (at-least-once), never loss.
 */
export class Bus {
  readonly #kafka: Kafka;
  readonly #options: BusOptions;
  readonly #logger: Logger;
  readonly #publisher: Publisher;
  #admin: Promise<Admin> | undefined;
  readonly #consumers = new Set<Consumer>();
  /** Groups this bus consumes for, with their topics, for the lag gauge. */
  readonly #groups = new Map<Consumer, { group: string; topics: string[] }>();
  readonly #partitionCounts = new Map<string, number>();

  constructor(options: BusOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: "bus" });
    this.#kafka = kafkaClient(options, this.#logger);
    this.#publisher = new Publisher({
      clientId: options.clientId,
      security: this.#security,
      retries: options.retries,
      admin: () => this.#ensureAdmin(),
    });
  }

  /** The TLS and SASL settings of the bus's own connections, the same kafkajs gets. */
  get #security(): ConnectionSecurity {
    const { tls, sasl } = this.#options;
    return { ...(tls ? { tls } : {}), ...(sasl ? { sasl } : {}) };
  }

  /**
   * Proves at start-up that the brokers take this process's connection settings: null when
   * they do, else the setting to fix and why in one line. Waits up to `waitMs` while nothing
   * answers (a broker starting alongside); a refusal (password, certificate) answers at once.
   */
  checkConnection(
    options: { waitMs?: number; onWait?: (problem: KafkaProblem) => void } = {},
  ): Promise<KafkaProblem | null> {
    return awaitKafka(
      { brokers: this.#options.brokers, ...this.#security },
      {
        clientId: this.#options.clientId,
        waitMs: options.waitMs ?? 0,
        ...(options.onWait ? { onWait: options.onWait } : {}),
      },
    );
  }

  #ensureAdmin(): Promise<Admin> {
    if (!this.#admin) {
      const admin = this.#kafka.admin();
      const ready = admin.connect().then(() => admin);
      this.#admin = ready;
      ready.catch(() => {
        if (this.#admin === ready) {
          this.#admin = undefined;
        }
      });
    }
    return this.#admin;
  }

  /**
   * Creates what is missing of the plan's topics for `contracts` (and their parking topics) on a
   * one-broker cluster: tests, benches and the dev broker. Deployments apply the whole plan with
   * `npm run topics -- --apply` instead; services only check (`requireTopics`).
   */
  async provision(contracts: readonly AnyTopicContract[]): Promise<void> {
    const plan = topicPlan(SINGLE_NODE_REPLICATION, contracts);
    const admin = await this.#ensureAdmin();
    const missing = new Set(
      await missingTopics(
        admin,
        plan.map((entry) => entry.topic),
      ),
    );
    await applyTopicDifferences(
      admin,
      plan
        .filter((entry) => missing.has(entry.topic))
        .map((entry) => ({ kind: "missing", topic: entry.topic, entry }) as const),
    );
  }

  /** How the cluster departs from `plan`: missing topics, partition counts, replicas, configs. */
  async topicDifferences(plan: readonly TopicPlanEntry[]): Promise<TopicDifference[]> {
    const admin = await this.#ensureAdmin();
    return diffTopics(plan, await observeTopics(admin, plan));
  }

  /**
   * Creates the plan's missing topics and adds missing partitions; never deletes, shrinks or
   * re-configures. Answers what it changed and the differences it leaves for an operator.
   */
  async applyTopicPlan(
    plan: readonly TopicPlanEntry[],
  ): Promise<{ applied: TopicDifference[]; remaining: TopicDifference[] }> {
    const admin = await this.#ensureAdmin();
    const applied = await applyTopicDifferences(admin, await this.topicDifferences(plan));
    return { applied, remaining: await this.topicDifferences(plan) };
  }

  /**
   * Throws MissingTopicsError naming every topic (or parking topic) of `contracts` the cluster
   * lacks. Services call this at start instead of creating topics: a cluster without the plan
   * applied fails in one line rather than run on auto-created, mis-sized topics.
   */
  async requireTopics(contracts: readonly AnyTopicContract[]): Promise<void> {
    const admin = await this.#ensureAdmin();
    const wanted = contracts.flatMap((contract) => [contract.topic, parkedTopicOf(contract.topic)]);
    const missing = await missingTopics(admin, wanted);
    if (missing.length > 0) {
      throw new MissingTopicsError(missing);
    }
  }

  /** Publishes values in one request; resolves once every broker acknowledged them (acks=-1). */
  async publish<T>(
    contract: TopicContract<T>,
    values: T | readonly T[],
    options: PublishOptions = {},
  ): Promise<void> {
    const list = (Array.isArray(values) ? values : [values]) as readonly T[];
    await this.publishRecords(
      contract,
      list.map((value) => ({ value })),
      options,
    );
  }

  /**
   * Follows a topic's record keys from its end, without a group, on this instance alone (see
   * `tailKeys`): for a cache every instance keeps and the topic's changes must reach.
   */
  tailKeys(topic: string, handlers: KeyTailHandlers, options: KeyTailOptions = {}): KeyTail {
    return tailKeys(
      {
        admin: () => this.#ensureAdmin(),
        clientId: `${this.#options.clientId}-tail`,
        security: this.#security,
      },
      topic,
      handlers,
      options,
    );
  }

  /**
   * A publisher of one topic whose concurrent publishes share a produce request (see
   * `LingeringPublisher`): for a hot path where many callers each publish a few records.
   */
  lingering<T>(contract: TopicContract<T>, options: LingeringOptions): LingeringPublisher<T> {
    return new LingeringPublisher(
      contract,
      (topic, count, fill, signal) => this.#publisher.produceTo(topic, count, fill, signal),
      options,
    );
  }

  /**
   * Publishes records in one request, each with its own headers on top of the shared ones: the
   * outbox relay uses this to send each event in the trace of the work that wrote it.
   */
  async publishRecords<T>(
    contract: TopicContract<T>,
    records: readonly PublishedRecord<T>[],
    options: PublishOptions = {},
  ): Promise<void> {
    await this.#publisher.produce(contract, records.length, options, (add, shared, schema) => {
      for (const record of records) {
        add(
          contract.keyOf(record.value),
          encodeValueTransient(contract, record.value),
          record.headers ? encodeHeaders({ ...shared, ...record.headers, ...schema }) : undefined,
        );
      }
    });
  }

  /**
   * Publishes records encoded ahead of time (a producer that also stores them encoded), as
   * `publishRecords` would publish their values.
   */
  async publishEncoded<T>(
    records: EncodedRecords<T>,
    options: { headers?: Record<string, string> } = {},
  ): Promise<void> {
    if (records.keys.length !== records.values.length) {
      throw new Error(
        `${records.keys.length} keys for ${records.values.length} values of ${records.contract.topic}`,
      );
    }
    await this.#publisher.produce(records.contract, records.values.length, options, (add) => {
      for (let index = 0; index < records.values.length; index++) {
        add(records.keys[index] as string, records.values[index] as Buffer, undefined);
      }
    });
  }

  async consume(options: ConsumeOptions): Promise<RunningConsumer> {
    const timings = { sessionTimeout: SESSION_TIMEOUT_MS, ...this.#options.consumerTimings };
    const consumer = this.#kafka.consumer({
      groupId: options.group,
      allowAutoTopicCreation: false,
      ...(timings.sessionTimeout ? { sessionTimeout: timings.sessionTimeout } : {}),
      ...(timings.heartbeatInterval ? { heartbeatInterval: timings.heartbeatInterval } : {}),
      ...(timings.maxWaitTimeInMs ? { maxWaitTimeInMs: timings.maxWaitTimeInMs } : {}),
      ...(options.maxBytesPerPartition
        ? { maxBytesPerPartition: options.maxBytesPerPartition }
        : {}),
      ...(options.minBytes ? { minBytes: options.minBytes } : {}),
      ...(options.maxWaitTimeInMs ? { maxWaitTimeInMs: options.maxWaitTimeInMs } : {}),
    });
    const byTopic = new Map(options.subscriptions.map((sub) => [sub.contract.topic, sub]));
    const logger = this.#logger.child({ group: options.group });
    const attempts = new Attempts();
    const ctx: ConsumerContext = {
      logger,
      maxAttempts: options.maxAttempts ?? 5,
      isUnavailable: (error) => this.#options.isUnavailable?.(error) ?? false,
      attempts,
      redelivery: new Redelivery(consumer, attempts, logger),
      progress: new ProcessedOffsets(),
      heartbeatEveryMs: timings.heartbeatInterval ?? 3000,
      park: (topic, partition, records) =>
        parkRecords(
          (count, fill) => this.#publisher.produceTo(parkedTopicOf(topic), count, fill),
          { topic, partition, group: options.group, logger },
          records,
        ),
    };

    await consumer.connect();
    await consumer.subscribe({
      topics: [...byTopic.keys()],
      fromBeginning: options.fromBeginning ?? true,
    });
    const runConfig = {
      eachBatchAutoResolve: false,
      autoCommit: true,
      ...(options.commitIntervalMs ? { autoCommitInterval: options.commitIntervalMs } : {}),
      partitionsConsumedConcurrently: options.partitionsConsumedConcurrently ?? 1,
      eachBatch: dispatchBatches(ctx, byTopic),
    };
    const rejoining = rejoinOnCrash(consumer, runConfig, logger);
    await consumer.run(runConfig);
    this.#consumers.add(consumer);
    this.#groups.set(consumer, { group: options.group, topics: [...byTopic.keys()] });
    return {
      stop: async () => {
        rejoining.stop();
        ctx.redelivery.cancel();
        this.#consumers.delete(consumer);
        this.#groups.delete(consumer);
        ctx.progress.close();
        await consumer.disconnect();
      },
      waitUntilProcessed: (topic, partition, offset, waitOptions = {}) =>
        ctx.progress.waitFor(topic, partition, BigInt(offset), {
          timeoutMs: waitOptions.timeoutMs ?? 5000,
          committed: () => this.#committedOffset(options.group, topic, partition),
        }),
    };
  }

  /** The group's committed offset of one partition, or -1 when it has none. */
  async #committedOffset(group: string, topic: string, partition: number): Promise<bigint> {
    const offset = (await this.committedOffsets(group, topic)).get(partition);
    return offset === undefined ? -1n : BigInt(offset);
  }

  /** A group's committed offset of each partition of a topic ("-1" where it has none). */
  async committedOffsets(group: string, topic: string): Promise<Map<number, string>> {
    const admin = await this.#ensureAdmin();
    const [committed] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
    return new Map((committed?.partitions ?? []).map((item) => [item.partition, item.offset]));
  }

  /**
   * Records not yet processed by each consumer group of this process: per group, topic and
   * partition, the high-water mark (`end`) minus the group's committed offset (all of it when
   * nothing is committed).
   */
  async consumerLag(): Promise<
    { group: string; topic: string; partition: number; lag: number; end: number }[]
  > {
    const rows: { group: string; topic: string; partition: number; lag: number; end: number }[] =
      [];
    const seen = new Set<string>();
    for (const { group, topics } of this.#groups.values()) {
      for (const topic of topics) {
        if (seen.has(`${group}\u0000${topic}`)) {
          continue;
        }
        seen.add(`${group}\u0000${topic}`);
        const [high, committed] = await Promise.all([
          this.highWaterMarks(topic),
          this.committedOffsets(group, topic),
        ]);
        for (const [partition, end] of high) {
          const done = Number(committed.get(partition) ?? "-1");
          rows.push({
            group,
            topic,
            partition,
            lag: Math.max(0, Number(end) - Math.max(0, done)),
            end: Number(end),
          });
        }
      }
    }
    return rows;
  }

  /** Each partition's high-water mark: the offset the next produced record will get. */
  async highWaterMarks(topic: string): Promise<Map<number, string>> {
    const admin = await this.#ensureAdmin();
    const offsets = await admin.fetchTopicOffsets(topic);
    return new Map(offsets.map((item) => [item.partition, item.high]));
  }

  /**
   * The partition a record with this key goes to, as the producer picks it (the Java client's
   * murmur2 over the topic's current partition count).
   */
  async partitionFor(topic: string, key: string): Promise<number> {
    let count = this.#partitionCounts.get(topic);
    if (count === undefined) {
      const admin = await this.#ensureAdmin();
      const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
      count = metadata.topics[0]?.partitions.length ?? 0;
      if (count === 0) {
        throw new Error(`topic ${topic} has no partitions`);
      }
      this.#partitionCounts.set(topic, count);
    }
    return partitionOfKey(key, count);
  }

  /**
   * Reads a topic from its first offset up to the high-water marks it had when the replay
   * began, with plain fetches and no consumer group (nothing joins, nothing commits), so live
   * groups are untouched. Records that cannot be decoded are skipped (the live consumer parks
   * them). The lean reader (`log-reader.ts`) skips kafkajs's per-record objects, which capped a
   * replay at a few tens of thousands of records a second.
   */
  async replay<T>(contract: TopicContract<T>, options: ReplayOptions<T>): Promise<ReplayResult> {
    return replayTopic(
      await this.#ensureAdmin(),
      { clientId: this.#options.clientId, security: this.#security },
      contract,
      options,
    );
  }

  /** Readiness: the cluster answers a metadata request. */
  async ping(): Promise<boolean> {
    try {
      const admin = await this.#ensureAdmin();
      await admin.describeCluster();
      return true;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.#consumers].map((consumer) => consumer.disconnect()));
    this.#consumers.clear();
    this.#publisher.close();
    const admin = this.#admin;
    this.#admin = undefined;
    await admin?.then(
      (connected) => connected.disconnect(),
      () => {},
    );
  }
}
