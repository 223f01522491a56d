import type { FetchPurgatory } from "../fetch-purgatory.ts";
import type { GroupCoordinator } from "../groups/coordinator.ts";
import type { Flusher } from "../log/flusher.ts";
import type { Logger } from "../logger.ts";
import type { OffsetsStore } from "../offsets-store.ts";
import type { Reader } from "../protocol/reader.ts";
import type { Writer } from "../protocol/writer.ts";
import type { TopicRegistry } from "../topics.ts";

export interface RequestHeader {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  clientId: string;
}

export interface ClientConnection {
  readonly clientHost: string;
  readonly closed: boolean;
  /** Registers a callback run once when the socket closes; returns an unregister function. */
  onClose(callback: () => void): () => void;
}

export interface BrokerSettings {
  nodeId: number;
  clusterId: string;
  advertisedHost: string;
  advertisedPort: number;
  autoCreateTopics: boolean;
  defaultPartitions: number;
  strictReplicationFactor: boolean;
}

export interface BrokerContext {
  settings: BrokerSettings;
  topics: TopicRegistry;
  offsets: OffsetsStore;
  coordinator: GroupCoordinator;
  purgatory: FetchPurgatory;
  /** Null in memory mode: nothing to fsync. */
  flusher: Flusher | null;
  logger: Logger;
  allocateProducerId(): number;
  stats: { messagesAppended: number; bytesAppended: number };
}

/** A null result means "send nothing" (acks=0 produce) while keeping the response order slot. */
export type HandlerResult = Writer | null;

export interface ApiDefinition {
  apiKey: number;
  name: string;
  minVersion: number;
  maxVersion: number;
  handle(
    ctx: BrokerContext,
    header: RequestHeader,
    reader: Reader,
    connection: ClientConnection,
  ): HandlerResult | Promise<HandlerResult>;
}
