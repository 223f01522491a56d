import type { TopicContract } from "@th/contracts";
import { injectContext } from "@th/telemetry";
import type { Admin } from "kafkajs";
import { KeylessPlacement, partitionOfKey } from "./partitioner.ts";
import { PublishAbortedError, RecordProducer, type TopicRoute, unlessAborted } from "./producer.ts";
import { encodeHeaders, PartitionBatches } from "./record-batch.ts";
import { schemaHeaders } from "./serde.ts";
import type { ConnectionSecurity } from "./wire.ts";

export interface PublishOptions {
  headers?: Record<string, string>;
  /**
   * Gives the publish up when it fires (e.g. `AbortSignal.timeout(ms)`): it rejects with
   * `PublishAbortedError` and sends nothing more, however many retries were left.
   */
  signal?: AbortSignal;
}

export interface PublisherConnection {
  clientId: string;
  security: ConnectionSecurity;
  /** Retries of a failed request before it fails; 8 when undefined. */
  retries: number | undefined;
  /** The admin client that answers where a topic's partitions lead. */
  admin: () => Promise<Admin>;
}

/**
 * The bus's write path: places records in partitions (by key, or round-robin over the live
 * leaders), batches them per partition and sends them through the bus's own producer, which it
 * opens on first use.
 */
export class Publisher {
  readonly #connection: PublisherConnection;
  #producer: RecordProducer | undefined;
  readonly #keyless = new KeylessPlacement();

  constructor(connection: PublisherConnection) {
    this.#connection = connection;
  }

  #recordProducer(): RecordProducer {
    if (!this.#producer) {
      this.#producer = new RecordProducer({
        clientId: this.#connection.clientId,
        security: this.#connection.security,
        lookup: (topic) => this.#routeOf(topic),
        retries: this.#connection.retries ?? 8,
        initialRetryMs: 200,
        ackTimeoutMs: 30_000,
        requestTimeoutMs: 35_000,
        maxRouteAgeMs: 5 * 60_000,
      });
    }
    return this.#producer;
  }

  async #routeOf(topic: string): Promise<TopicRoute> {
    const admin = await this.#connection.admin();
    const [metadata, cluster] = await Promise.all([
      admin.fetchTopicMetadata({ topics: [topic] }),
      admin.describeCluster(),
    ]);
    const partitions = metadata.topics[0]?.partitions ?? [];
    if (partitions.length === 0) {
      throw new Error(`topic ${topic} has no partitions`);
    }
    const brokers = new Map(cluster.brokers.map((broker) => [broker.nodeId, broker]));
    const leaders: TopicRoute["leaders"][number][] = [];
    for (const partition of partitions) {
      const broker = brokers.get(partition.leader);
      leaders[partition.partitionId] = broker
        ? { host: broker.host, port: broker.port }
        : undefined;
    }
    return { leaders };
  }

  /** One produce of `count` records, which `fill` adds with their own headers or the shared. */
  async produce<T>(
    contract: TopicContract<T>,
    count: number,
    options: PublishOptions,
    fill: (
      add: (key: string, value: Buffer, headers: Buffer | undefined) => void,
      shared: Record<string, string>,
      schema: Record<string, string>,
    ) => void,
  ): Promise<void> {
    if (count === 0) {
      return;
    }
    const schema = schemaHeaders(contract);
    const shared = injectContext({ ...options.headers, ...schema });
    const sharedSection = encodeHeaders(shared);
    await this.produceTo(
      contract.topic,
      count,
      (add) =>
        fill((key, value, headers) => add(key, value, headers ?? sharedSection), shared, schema),
      options.signal,
    );
  }

  /**
   * Writes the records `fill` adds into one batch per partition (keyed records by their key's
   * partition, the others round-robin) and sends them; resolves once all are acknowledged.
   */
  async produceTo(
    topic: string,
    count: number,
    fill: (
      add: (key: Buffer | string | null, value: Buffer | null, headers: Buffer) => void,
    ) => void,
    signal?: AbortSignal,
  ): Promise<void> {
    const producer = this.#recordProducer();
    const route = await unlessAborted(
      producer.route(topic),
      signal,
      () => new PublishAbortedError(`produce to ${topic} given up before anything was sent`, false),
    );
    const partitions = route.leaders.length;
    const batches = new PartitionBatches({
      timestamp: Date.now(),
      expectedRecords: count,
      partitions,
    });
    fill((key, value, headers) => {
      const partition =
        key !== null
          ? partitionOfKey(key, partitions)
          : this.#keyless.next(
              topic,
              route.leaders.map((leader) => leader !== undefined),
            );
      batches.add(partition, key, value, headers);
    });
    await producer.produce(topic, batches.finish(), signal);
  }

  /** Closes the producer's connections; a later produce opens them again. */
  close(): void {
    this.#producer?.close();
    this.#producer = undefined;
  }
}
