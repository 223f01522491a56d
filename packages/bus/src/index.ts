export {
  type AnyTopicContract,
  type BatchHandler,
  type BatchSubscription,
  Bus,
  type BusOptions,
  type ConsumeOptions,
  type Delivered,
  type Handler,
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
  type BatchOutcome,
  backoffMs,
  done,
  type Outcome,
  park,
  retryLater,
} from "./outcomes.ts";
export { ProduceError, PublishAbortedError } from "./producer.ts";
export { unreachableBrokers } from "./reachability.ts";
export {
  decodeValue,
  type EncodedRecords,
  encodeValue,
  PoisonRecordError,
  ValueEncoder,
} from "./serde.ts";
