// Hand-written mirrors of the .avsc schemas. `types.test.ts` proves each one
// against its schema, so a field added to one side only fails the build.
//
// Encoding conventions shared by every record:
// - `Instant`: RFC 3339 UTC with milliseconds, exactly `Date#toISOString()`.
// - `UtcDay`: `YYYY-MM-DD`, a UTC calendar day.
// - Money: whole US dollars in an Avro `long` (JS number, safe to 2^53).
// - Nullable fields: Avro `["null", T]` with default null; here `T | null`.

import { RECIPE_USE_CLASSES } from "@th/api-schemas/catalogue";

/** RFC 3339 UTC instant, `YYYY-MM-DDTHH:mm:ss.sssZ`. */
export type Instant = string;
/** UTC calendar day, `YYYY-MM-DD`. */
export type UtcDay = string;

export const ROLL_STAGES = ["preliminary", "final"] as const;
export type RollStage = (typeof ROLL_STAGES)[number];

/**
 * The use classes of `land_use.use_class`: the public catalogue's list, which recipes filter on,
 * so the event and the API name the same classes (`types.test.ts` holds it to the schema's enum).
 */
export const USE_CLASSES = RECIPE_USE_CLASSES;
export type UseClass = (typeof USE_CLASSES)[number];

export interface Situs {
  address: string | null;
  city: string | null;
  zip: string | null;
}

export interface LandUse {
  dor_uc: string | null;
  use_class: UseClass | null;
  appraiser_uc: string | null;
}

export interface MailingAddress {
  line1: string | null;
  line2: string | null;
  city: string | null;
  /** OWN_STATE as on the roll, before normalization. */
  state: string | null;
  zip: string | null;
}

export interface Owner {
  name: string;
  /** USPS two-letter code; null when blank or outside the US. */
  mailing_state: string | null;
  mailing_address: MailingAddress;
}

export interface Valuation {
  just_value: number;
  assessed_value: number | null;
  taxable_value: number | null;
  land_value: number | null;
  est_equity: number | null;
  equity_ratio: number | null;
}

/** The roll records a sale's year and month only. */
export interface Sale {
  price: number;
  year: number;
  month: number;
  qualification_code: string | null;
}

/** `parcel.ingested`, key folio. */
export interface ParcelIngested {
  ingest_id: string;
  folio: string;
  county_no: number;
  parcel_id: string;
  roll_year: number;
  roll_stage: RollStage;
  source_file: string | null;
  content_hash: string;
  previous_content_hash: string | null;
  situs: Situs;
  land_use: LandUse;
  owner: Owner;
  valuation: Valuation;
  year_built: number | null;
  living_area_sqft: number | null;
  land_sqft: number | null;
  homestead: boolean;
  last_sale: Sale | null;
  last_qualified_sale: Sale | null;
  signals_fired: readonly string[];
  observed_at: Instant;
}

export const MATCH_TRIGGERS = ["ingest", "manual_run"] as const;
export type MatchTrigger = (typeof MATCH_TRIGGERS)[number];

export interface WatchlistRef {
  id: string;
  name: string;
}

export interface MatchOwner {
  name: string;
  mailing_state: string | null;
}

export interface MatchValuation {
  just_value: number;
  est_equity: number | null;
}

/** The `match` object of the `watchlist.match` webhook payload. */
export interface Match {
  folio: string;
  address: string;
  score: number;
  signals_fired: readonly string[];
  owner: MatchOwner;
  valuation: MatchValuation;
  observed_at: Instant;
}

/** `match.found`, key tenant_id. */
export interface MatchFound {
  match_id: string;
  tenant_id: string;
  watchlist: WatchlistRef;
  recipe_version: number;
  trigger: MatchTrigger;
  ingest_id: string | null;
  parcel_content_hash: string;
  match: Match;
  occurred_at: Instant;
}

export const FAILURE_KINDS = [
  "http_status",
  "timeout",
  "network",
  "blocked_address",
  "other",
] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

export const DELIVERY_STATES = ["complete", "retrying", "dead_letter"] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** Which delivery a delivery record speaks of: its endpoint, tenant and match. */
export interface DeliveryIdentity {
  delivery_id: string;
  endpoint_id: string;
  tenant_id: string;
  watchlist_id: string;
  match_id: string;
  folio: string;
}

/** `delivery.attempted`, key delivery_id. */
export interface DeliveryAttempted extends DeliveryIdentity {
  attempt: number;
  replay_no: number;
  attempted_at: Instant;
  duration_ms: number | null;
  status_code: number | null;
  failure: FailureKind | null;
  error: string | null;
  state: DeliveryState;
  next_attempt_at: Instant | null;
}

/** `delivery.retry.{1s,5s,30s,5m}`, key delivery_id. */
export interface DeliveryRetry extends DeliveryIdentity {
  event_type: string;
  payload_json: string;
  attempt: number;
  replay_no: number;
  due_at: Instant;
  first_attempted_at: Instant;
  last_status_code: number | null;
  last_failure: FailureKind | null;
  last_error: string | null;
}

export const DEAD_LETTER_REASONS = [
  "attempts_exhausted",
  "rejected_by_receiver",
  "blocked_address",
  "endpoint_removed",
  "other",
] as const;
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];

/** `delivery.dead-letter`, key delivery_id. */
export interface DeliveryDeadLetter extends DeliveryIdentity {
  event_type: string;
  payload_json: string;
  attempts: number;
  replay_no: number;
  reason: DeadLetterReason;
  last_status_code: number | null;
  last_failure: FailureKind | null;
  last_error: string | null;
  first_attempted_at: Instant;
  last_attempted_at: Instant;
  dead_lettered_at: Instant;
  hold_until: Instant;
}

export const SURFACES = ["rest", "mcp", "csv", "web", "webhook", "other"] as const;
export type Surface = (typeof SURFACES)[number];

/** `leadview.recorded`, key tenant_id. */
export interface LeadViewRecorded {
  tenant_id: string;
  folio: string;
  day: UtcDay;
  billing_period_start: UtcDay;
  surface: Surface;
  request_id: string;
  key_id: string | null;
  member_id: string | null;
  recorded_at: Instant;
}

/**
 * `leadview.voided`, key tenant_id. The views a read recorded (or tried to) and did not deliver:
 * any of them in the log is not charged (docs/decisions/0190-lead-view-voided.md).
 */
export interface LeadViewVoided {
  tenant_id: string;
  request_id: string;
  day: UtcDay;
  folios: string[];
  reason: string;
  voided_at: Instant;
}

export const TIERS = ["starter", "operator", "team", "custom"] as const;
export type Tier = (typeof TIERS)[number];

export const TENANT_STATUSES = ["trialing", "active", "cancelled"] as const;
export type TenantStatus = (typeof TENANT_STATUSES)[number];

/**
 * Whether a tenant's payments are in order, apart from its status: `past_due` while a failed
 * payment's grace period runs (reads go on), `suspended` once it ran out (paid reads refused).
 */
export const PAYMENT_STANDINGS = ["good", "past_due", "suspended"] as const;
export type PaymentStanding = (typeof PAYMENT_STANDINGS)[number];

export interface QuotaLimits {
  lead_views_per_month: number;
  rate_per_minute: number;
  concurrent_webhooks: number;
  seats: number;
}

/** `tenant.changed`, key tenant_id. A full snapshot; the highest revision wins. */
export interface TenantChanged {
  tenant_id: string;
  revision: number;
  tier: Tier;
  status: TenantStatus;
  limits: QuotaLimits;
  billing_anniversary: UtcDay | null;
  trial_ends_at: Instant | null;
  changed_at: Instant;
  /** Absent in records written before revision 2 of the schema, which read as `good`. */
  standing?: PaymentStanding;
}

/** Which API key a key record speaks of, as the gateway authenticates it. */
export interface KeyIdentity {
  key_id: string;
  tenant_id: string;
  key_hash: string;
  last4: string;
  member_id: string;
  label: string;
}

/** `key.issued`, key tenant_id. */
export interface KeyIssued extends KeyIdentity {
  issued_at: Instant;
}

export const KEY_REVOKE_REASONS = ["manual", "compromise", "tenant_cancelled", "other"] as const;
export type KeyRevokeReason = (typeof KEY_REVOKE_REASONS)[number];

/** `key.revoked`, key tenant_id. */
export interface KeyRevoked extends KeyIdentity {
  revoked_by_member_id: string | null;
  reason: KeyRevokeReason;
  revoked_at: Instant;
}

export const PIPELINE_CHANGE_TYPES = [
  "added",
  "moved",
  "assigned",
  "tagged",
  "follow_up_set",
  "noted",
  "removed",
  "other",
] as const;
export type PipelineChangeType = (typeof PIPELINE_CHANGE_TYPES)[number];

/**
 * `pipeline.item-changed`, key tenant_id. One change of a pipeline item; the item's history is
 * the stream of these in version order, and folding them gives the item.
 */
export interface PipelineItemChanged {
  event_id: string;
  tenant_id: string;
  item_id: string;
  folio: string;
  version: number;
  type: PipelineChangeType;
  member_id: string;
  key_id: string | null;
  occurred_at: Instant;
  stage_id: string | null;
  from_stage_id: string | null;
  assignee_id: string | null;
  tags: string[] | null;
  follow_up_on: UtcDay | null;
  note_id: string | null;
  note_text: string | null;
  /** The lead as read when added, JSON in the REST Lead shape. */
  lead_snapshot: string | null;
}

export const PIPELINE_STAGE_CHANGE_TYPES = [
  "created",
  "renamed",
  "reordered",
  "retired",
  "restored",
  "other",
] as const;
export type PipelineStageChangeType = (typeof PIPELINE_STAGE_CHANGE_TYPES)[number];

/** `pipeline.stage-changed`, key tenant_id. The stage as it is after a change. */
export interface PipelineStageChanged {
  event_id: string;
  tenant_id: string;
  stage_id: string;
  type: PipelineStageChangeType;
  name: string;
  position: number;
  retired: boolean;
  member_id: string | null;
  occurred_at: Instant;
}
