export {
  type AnyTopicContract,
  Bus,
  type BusOptions,
  type ConsumeOptions,
  type Delivered,
  type Handler,
  on,
  PARK_HEADERS,
  type PublishedRecord,
  type ReplayedRecord,
  type ReplayOptions,
  type ReplayResult,
  type RunningConsumer,
  type Subscription,
} from "./bus.ts";
export { backoffMs, done, type Outcome, park, retryLater } from "./outcomes.ts";
export { decodeValue, encodeValue, PoisonRecordError } from "./serde.ts";
