import type { Type } from "avsc";
import { registry } from "./registry.ts";
import { schemaHeaderValue, type TopicContract } from "./topic-contracts.ts";

export {
  allContracts,
  type ContractName,
  contractForTopic,
  contracts,
  deliveryRetryLadder,
  parkedTopicOf,
  RETAIN_FOREVER,
  SCHEMA_HEADER,
  schemaHeaderValue,
  type TopicContract,
  writerTypeFor,
} from "./topic-contracts.ts";

type Resolver = ReturnType<Type["createResolver"]>;
const resolvers = new Map<string, Resolver>();

/** Avro-encodes a value with the current schema; throws if it does not fit. */
export function encodeRecord<T>(c: TopicContract<T>, value: T): Buffer {
  return c.type.toBuffer(value);
}

/**
 * Encodes a record of `c`'s topic into `buffer` from `pos`; answers where it ended, or, when the
 * buffer is too small, a negative number (how many bytes were missing).
 */
export function encodeRecordInto<T>(
  c: TopicContract<T>,
  value: T,
  buffer: Buffer,
  pos: number,
): number {
  return c.type.encode(value, buffer, pos);
}

/**
 * Decodes a record of `c`'s topic into the current reader shape. The header
 * picks the writer schema; without one the current schema is assumed.
 */
export function decodeRecord<T>(c: TopicContract<T>, buf: Buffer, headerValue?: string): T {
  const header = headerValue?.trim();
  if (header === undefined || header === schemaHeaderValue(c)) {
    return c.type.fromBuffer(buf) as T;
  }
  const cacheKey = `${c.schemaName}|${header}`;
  let resolver = resolvers.get(cacheKey);
  if (!resolver) {
    const writer = registry.forHeader(header);
    if (!writer) {
      throw new Error(`${c.topic}: unknown writer schema ${header}; park the record and upgrade`);
    }
    if (writer.schemaName !== c.schemaName) {
      throw new Error(
        `${c.topic}: record written as ${writer.schemaName}, expected ${c.schemaName}`,
      );
    }
    resolver = c.type.createResolver(writer.type);
    resolvers.set(cacheKey, resolver);
  }
  return c.type.fromBuffer(buf, resolver) as T;
}

export { assertBackwardCompatible, compatibilityProblems } from "./compat.ts";
export {
  fingerprintOf,
  loadSchemaRegistry,
  parseSchema,
  registry,
  type SchemaRegistry,
  type SchemaVersion,
} from "./registry.ts";
export { formatAddress } from "./situs.ts";
export { isInstant, isUtcDay, toInstant, utcDayOf } from "./time.ts";
export {
  PRODUCTION_REPLICATION,
  SINGLE_NODE_REPLICATION,
  type TopicPlanEntry,
  type TopicReplication,
  topicPlan,
} from "./topic-plan.ts";
export type {
  DeadLetterReason,
  DeliveryAttempted,
  DeliveryDeadLetter,
  DeliveryRetry,
  DeliveryState,
  FailureKind,
  Instant,
  KeyIssued,
  KeyRevoked,
  KeyRevokeReason,
  LandUse,
  LeadViewRecorded,
  LeadViewVoided,
  MailingAddress,
  Match,
  MatchFound,
  MatchOwner,
  MatchTrigger,
  MatchValuation,
  Owner,
  ParcelIngested,
  PaymentStanding,
  PipelineChangeType,
  PipelineItemChanged,
  PipelineStageChanged,
  PipelineStageChangeType,
  QuotaLimits,
  RollStage,
  Sale,
  Situs,
  Surface,
  TenantChanged,
  TenantStatus,
  Tier,
  UseClass,
  UtcDay,
  Valuation,
  WatchlistRef,
} from "./types.ts";
export {
  DEAD_LETTER_REASONS,
  DELIVERY_STATES,
  FAILURE_KINDS,
  KEY_REVOKE_REASONS,
  MATCH_TRIGGERS,
  PAYMENT_STANDINGS,
  PIPELINE_CHANGE_TYPES,
  PIPELINE_STAGE_CHANGE_TYPES,
  ROLL_STAGES,
  SURFACES,
  TENANT_STATUSES,
  TIERS,
  USE_CLASSES,
} from "./types.ts";
