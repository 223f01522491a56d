// The topic catalogue: every topic's contract (schema, partitions, retention, key), the retry
// ladder and the parked-topic naming. The package's index re-exports it, and the topic plan
// builds on it, so it imports neither.
import type { Type } from "avsc";
import { registry } from "./registry.ts";
import type {
  DeliveryAttempted,
  DeliveryDeadLetter,
  DeliveryRetry,
  KeyIssued,
  KeyRevoked,
  LeadViewRecorded,
  LeadViewVoided,
  MatchFound,
  ParcelIngested,
  PipelineItemChanged,
  PipelineStageChanged,
  TenantChanged,
} from "./types.ts";

export interface TopicContract<T> {
  /** Kafka topic name, e.g. "parcel.ingested". */
  readonly topic: string;
  /** Current (reader) schema. */
  readonly type: Type;
  /** Fully qualified Avro name, e.g. "th.parcels.ParcelIngested". */
  readonly schemaName: string;
  /** Hex SHA-256 of the current schema's Parsing Canonical Form. */
  readonly fingerprint: string;
  /** Partitions to provision. */
  readonly partitions: number;
  /** -1 keeps records forever. */
  readonly retentionMs: number;
  /** Partition key. */
  readonly keyOf: (value: T) => string;
}

/** Kafka header naming the writer schema of a record: `${schemaName}@${fingerprint}`. */
export const SCHEMA_HEADER = "th-schema";

const DAY_MS = 86_400_000;
export const RETAIN_FOREVER = -1;
const RETRY_RETENTION_MS = DAY_MS;

// One partition count everywhere: topics sharing a key (tenant_id) then land a
// given tenant on the same partition number, so a consumer of several
// tenant-keyed topics can shard its state by partition.
const PARTITIONS = 12;

function define<T>(
  topic: string,
  schemaName: string,
  retentionMs: number,
  keyOf: (value: T) => string,
): TopicContract<T> {
  const current = registry.current(schemaName);
  return Object.freeze({
    topic,
    type: current.type,
    schemaName,
    fingerprint: current.fingerprint,
    partitions: PARTITIONS,
    retentionMs,
    keyOf,
  });
}

const byDelivery = (v: { delivery_id: string }): string => v.delivery_id;
const byTenant = (v: { tenant_id: string }): string => v.tenant_id;

export const contracts = Object.freeze({
  // The parcel store is the system of record; this topic is its change feed,
  // kept long enough to replay after an outage or a matcher redeploy.
  parcelIngested: define<ParcelIngested>(
    "parcel.ingested",
    "th.parcels.ParcelIngested",
    30 * DAY_MS,
    (v) => v.folio,
  ),
  // Outlives a billing month so matches parked for quota can still be re-read.
  matchFound: define<MatchFound>("match.found", "th.matches.MatchFound", 35 * DAY_MS, byTenant),
  deliveryAttempted: define<DeliveryAttempted>(
    "delivery.attempted",
    "th.delivery.DeliveryAttempted",
    30 * DAY_MS,
    byDelivery,
  ),
  // Retry records are due within minutes (the longest stage waits 5 minutes). The
  // deliveries table is the record of what is owed, and its sweep runs a retry the
  // topic did not hand back, so a day covers a dispatcher outage without keeping
  // a week of stale hand-offs.
  deliveryRetry1s: define<DeliveryRetry>(
    "delivery.retry.1s",
    "th.delivery.DeliveryRetry",
    RETRY_RETENTION_MS,
    byDelivery,
  ),
  deliveryRetry5s: define<DeliveryRetry>(
    "delivery.retry.5s",
    "th.delivery.DeliveryRetry",
    RETRY_RETENTION_MS,
    byDelivery,
  ),
  deliveryRetry30s: define<DeliveryRetry>(
    "delivery.retry.30s",
    "th.delivery.DeliveryRetry",
    RETRY_RETENTION_MS,
    byDelivery,
  ),
  deliveryRetry5m: define<DeliveryRetry>(
    "delivery.retry.5m",
    "th.delivery.DeliveryRetry",
    RETRY_RETENTION_MS,
    byDelivery,
  ),
  // The 30-day replay hold plus margin for late replays and clock skew.
  deliveryDeadLetter: define<DeliveryDeadLetter>(
    "delivery.dead-letter",
    "th.delivery.DeliveryDeadLetter",
    35 * DAY_MS,
    byDelivery,
  ),
  // The ledger is rebuilt from this topic, and a billing year plus a month for
  // disputes must stay replayable.
  leadViewRecorded: define<LeadViewRecorded>(
    "leadview.recorded",
    "th.usage.LeadViewRecorded",
    400 * DAY_MS,
    byTenant,
  ),
  // Replayed with leadview.recorded by the ledger rebuild, so kept as long.
  leadViewVoided: define<LeadViewVoided>(
    "leadview.voided",
    "th.usage.LeadViewVoided",
    400 * DAY_MS,
    byTenant,
  ),
  // Tenant and key state is rebuilt from these logs, so they are never trimmed.
  tenantChanged: define<TenantChanged>(
    "tenant.changed",
    "th.tenants.TenantChanged",
    RETAIN_FOREVER,
    byTenant,
  ),
  keyIssued: define<KeyIssued>("key.issued", "th.keys.KeyIssued", RETAIN_FOREVER, byTenant),
  keyRevoked: define<KeyRevoked>("key.revoked", "th.keys.KeyRevoked", RETAIN_FOREVER, byTenant),
  // A pipeline item's history is this stream, so it is kept as long as the items are.
  pipelineItemChanged: define<PipelineItemChanged>(
    "pipeline.item-changed",
    "th.pipeline.PipelineItemChanged",
    RETAIN_FOREVER,
    byTenant,
  ),
  pipelineStageChanged: define<PipelineStageChanged>(
    "pipeline.stage-changed",
    "th.pipeline.PipelineStageChanged",
    RETAIN_FOREVER,
    byTenant,
  ),
});

export type ContractName = keyof typeof contracts;

export const allContracts: readonly TopicContract<unknown>[] = Object.freeze(
  Object.values(contracts) as TopicContract<unknown>[],
);

const byTopic = new Map(allContracts.map((c) => [c.topic, c]));

export function contractForTopic(topic: string): TopicContract<unknown> | undefined {
  return byTopic.get(topic);
}

/**
 * The retry topics in ladder order: the topic a failed delivery goes to
 * before `attempt`, and the back-off it waits there.
 */
export const deliveryRetryLadder: readonly {
  readonly attempt: number;
  readonly delayMs: number;
  readonly contract: TopicContract<DeliveryRetry>;
}[] = Object.freeze([
  { attempt: 2, delayMs: 1_000, contract: contracts.deliveryRetry1s },
  { attempt: 3, delayMs: 5_000, contract: contracts.deliveryRetry5s },
  { attempt: 4, delayMs: 30_000, contract: contracts.deliveryRetry30s },
  { attempt: 5, delayMs: 300_000, contract: contracts.deliveryRetry5m },
]);

export function schemaHeaderValue<T>(c: TopicContract<T>): string {
  return `${c.schemaName}@${c.fingerprint}`;
}

/**
 * The writer schema a record names in its header, from every version this
 * package has ever shipped (so old records still decode with the current
 * reader schema via avsc resolvers).
 */
export function writerTypeFor(headerValue: string): Type | undefined {
  return registry.forHeader(headerValue)?.type;
}

/** Where a consumer sets aside records it cannot process yet; same schema and key as `topic`. */
export function parkedTopicOf(topic: string): string {
  return `${topic}.parked`;
}
