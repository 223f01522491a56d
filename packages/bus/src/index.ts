export {
  type AnyTopicContract,
  type BatchHandler,
  type BatchSubscription,
  Bus,
  type BusOptions,
  type ConsumeOptions,
  type Delivered,
  type Handler,
  MissingTopicsError,
  on,
  onBatch,
  PARK_HEADERS,
  type PublishedRecord,
  type PublishOptions,
  type RecordSubscription,
  type ReplayedRecord,
  type ReplayOptions,
  type ReplayResult,
  type RunningConsumer,
  type Subscription,
} from "./bus.ts";
export {
  type LingeringOptions,
  LingeringPublisher,
  type LingeringPublishOptions,
  PublishTimeoutError,
} from "./lingering.ts";
export {
  type BatchOutcome,
  backoffMs,
  done,
  type Outcome,
  park,
  retryLater,
} from "./outcomes.ts";
export { partitionOfKey } from "./partitioner.ts";
export { ProduceError, PublishAbortedError } from "./producer.ts";
export { awaitKafka, checkKafka, type KafkaProblem } from "./reachability.ts";
export {
  decodeValue,
  type EncodedRecords,
  encodeValue,
  PoisonRecordError,
  ValueEncoder,
} from "./serde.ts";
export type { KeyTail, KeyTailHandlers, KeyTailOptions } from "./tail.ts";
export {
  diffTopics,
  isApplicable,
  type ObservedTopic,
  type TopicDifference,
} from "./topic-admin.ts";
export { BrokerConnectionError, type ConnectionSecurity, KafkaSecurityError } from "./wire.ts";
